"""The ``minikafka`` command: one module per subcommand."""

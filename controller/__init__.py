"""minikafka controller package."""

"""minikafka storage package."""

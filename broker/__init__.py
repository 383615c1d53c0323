"""minikafka broker package."""

"""minikafka timer package."""

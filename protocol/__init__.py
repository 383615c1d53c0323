"""minikafka protocol package."""

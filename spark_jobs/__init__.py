"""minikafka spark_jobs package."""

"""One module per gateway protocol: the Locust users that speak it and their clients."""

import FleetTokenProxy
print("fleet-token-proxy")

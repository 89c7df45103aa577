"""Fleet Engine entities as the sidecar keys them (docs/CONTRACT.md §2, §3), shared by the stand-ins and tests.

An entity is (provider, type, id); the type names are the sidecar's and the token provider URL's
`{type}`: vehicle, trip, delivery_vehicle, task, tracking, fleet (whose id is always `*`).
"""
from __future__ import annotations

import dataclasses

VEHICLE = "vehicle"
TRIP = "trip"
DELIVERY_VEHICLE = "delivery_vehicle"
TASK = "task"
TRACKING = "tracking"
FLEET = "fleet"
TYPES = (VEHICLE, TRIP, DELIVERY_VEHICLE, TASK, TRACKING, FLEET)

# The collection segment of a resource name (`providers/{p}/{collection}/{id}`) per entity type.
COLLECTIONS = {
    VEHICLE: "vehicles",
    TRIP: "trips",
    DELIVERY_VEHICLE: "deliveryVehicles",
    TASK: "tasks",
    TRACKING: "taskTrackingInfo",
}

_FORBIDDEN_ID_CHARACTERS = set("/:\\?#")


@dataclasses.dataclass(frozen=True)
class Entity:
    provider: str
    type: str
    id: str

    @staticmethod
    def fleet(provider: str) -> "Entity":
        return Entity(provider, FLEET, "*")

    def resource_name(self) -> str:
        """`providers/{p}/vehicles/{id}` and the like; `providers/{p}` for the fleet."""
        if self.type == FLEET:
            return f"providers/{self.provider}"
        return f"providers/{self.provider}/{COLLECTIONS[self.type]}/{self.id}"

    def __str__(self) -> str:
        return f"{self.type} {self.id} of {self.provider}"


class BadResourceName(ValueError):
    """A request names no entity Fleet Engine would accept (answered INVALID_ARGUMENT)."""


def valid_entity_id(entity_id: str) -> bool:
    """docs/CONTRACT.md §2: 1-64 Unicode characters, none of `/ : \\ ? #`, no control characters."""
    if not 1 <= len(entity_id) <= 64:
        return False
    return not any(c in _FORBIDDEN_ID_CHARACTERS or ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in entity_id)


def parse_parent(parent: str) -> str:
    """The provider of `providers/{p}`."""
    parts = parent.split("/")
    if len(parts) != 2 or parts[0] != "providers" or not parts[1]:
        raise BadResourceName(f"parent must be providers/{{provider}}, got {parent!r}")
    return parts[1]


def parse_name(name: str, collection: str) -> tuple[str, str]:
    """(provider, id) of `providers/{p}/{collection}/{id}`."""
    parts = name.split("/")
    if len(parts) != 4 or parts[0] != "providers" or not parts[1] or parts[2] != collection:
        raise BadResourceName(f"name must be providers/{{provider}}/{collection}/{{id}}, got {name!r}")
    if not valid_entity_id(parts[3]):
        raise BadResourceName(f"{parts[3]!r} is not a valid id")
    return parts[1], parts[3]


def entity_from_name(name: str, entity_type: str) -> Entity:
    provider, entity_id = parse_name(name, COLLECTIONS[entity_type])
    return Entity(provider, entity_type, entity_id)


def entity_from_create(parent: str, entity_id: str, entity_type: str) -> Entity:
    provider = parse_parent(parent)
    if not valid_entity_id(entity_id):
        raise BadResourceName(f"{entity_id!r} is not a valid {entity_type} id")
    return Entity(provider, entity_type, entity_id)

"""RS256 JWTs shaped the way Fleet Engine expects them (docs/CONTRACT.md §2): minted by the Python stand-in
provider, judged by the stand-in Fleet Engine with the checks Fleet Engine makes, in its order.

Claims: `iss` = `sub` = the provider's service account, `aud` = Fleet Engine, `iat`, `exp` (at
most an hour later), and `authorization` naming the entity (`"*"` for every one of a kind).
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import secrets
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from fleet_entities import DELIVERY_VEHICLE, FLEET, TASK, TRACKING, TRIP, VEHICLE, Entity

AUDIENCE = "https://fleetengine.googleapis.com/"
MAXIMUM_LIFETIME = 3600
ALLOWED_CLOCK_SKEW = 600

# The claim field for each entity type.
CLAIM_FIELDS = {
    VEHICLE: "vehicleid",
    TRIP: "tripid",
    DELIVERY_VEHICLE: "deliveryvehicleid",
    TASK: "taskid",
    TRACKING: "trackingid",
}


def service_account(provider: str) -> str:
    """The account the stand-ins sign as; the same spelling as the Swift stand-in provider's."""
    return f"fleet-engine-stand-in@{provider}.iam.gserviceaccount.com"


def project_of(account: str) -> str | None:
    """`NAME@PROJECT.iam.gserviceaccount.com` → PROJECT; None for another shape."""
    name, at, domain = account.partition("@")
    suffix = ".iam.gserviceaccount.com"
    if not at or not domain.endswith(suffix) or len(domain) == len(suffix):
        return None
    return domain[: -len(suffix)]


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Strict unpadded base64url; ValueError for anything else."""
    if "=" in text or len(text) % 4 == 1:
        raise ValueError("not unpadded base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as error:
        raise ValueError(str(error)) from error


def authorization_claim(entity: Entity) -> dict:
    if entity.type == FLEET:
        return {field: "*" for field in CLAIM_FIELDS.values()}
    return {CLAIM_FIELDS[entity.type]: entity.id}


def claims_for(entity: Entity, *, now: float | None = None, lifetime: int = 3600) -> dict:
    """The claims of a token Fleet Engine accepts for `entity`; edit them to make one it refuses."""
    issued = int(time.time() if now is None else now)
    account = service_account(entity.provider)
    return {
        "iss": account,
        "sub": account,
        "aud": AUDIENCE,
        "iat": issued,
        "exp": issued + lifetime,
        "authorization": authorization_claim(entity),
    }


class SigningKey:
    """A service account key: RSA 2048 and a random key id."""

    def __init__(self, private_key: rsa.RSAPrivateKey, kid: str):
        self.private_key = private_key
        self.kid = kid

    @staticmethod
    def generate() -> "SigningKey":
        return SigningKey(rsa.generate_private_key(public_exponent=65537, key_size=2048), secrets.token_hex(8))

    @property
    def public_key(self) -> rsa.RSAPublicKey:
        return self.private_key.public_key()

    def mint(self, claims: dict, *, header: dict | None = None) -> str:
        head = {"alg": "RS256", "typ": "JWT", "kid": self.kid} if header is None else header
        signing_input = b64url(_json(head)) + "." + b64url(_json(claims))
        signature = self.private_key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64url(signature)

    def mint_for(self, entity: Entity, *, now: float | None = None, lifetime: int = 3600) -> str:
        return self.mint(claims_for(entity, now=now, lifetime=lifetime))


def _json(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")


def service_account_key_file(key: SigningKey, account: str) -> dict:
    """The key file Google issues for `account` (the fields `--signer key-file:` reads)."""
    pem = key.private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()).decode("ascii")
    return {"type": "service_account", "project_id": project_of(account), "private_key_id": key.kid,
            "private_key": pem, "client_email": account, "token_uri": "https://oauth2.googleapis.com/token"}


def jwks(keys: list[SigningKey]) -> dict:
    """Public keys as a JSON Web Key Set, the way Google publishes a service account's keys."""
    def number(value: int) -> str:
        return b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))

    return {"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": key.kid,
                      "n": number(key.public_key.public_numbers().n), "e": number(key.public_key.public_numbers().e)}
                     for key in keys]}


def load_jwks(text: str) -> list[tuple[str, rsa.RSAPublicKey]]:
    """The RSA keys of a JSON Web Key Set, as (kid, key) pairs."""
    keys = []
    for entry in json.loads(text)["keys"]:
        if entry.get("kty") != "RSA":
            continue
        n = int.from_bytes(b64url_decode(entry["n"]), "big")
        e = int.from_bytes(b64url_decode(entry["e"]), "big")
        keys.append((entry["kid"], rsa.RSAPublicNumbers(e, n).public_key()))
    return keys


def load_public_key_pem(pem: bytes) -> rsa.RSAPublicKey:
    key = serialization.load_pem_public_key(pem)
    if not isinstance(key, rsa.RSAPublicKey):
        raise ValueError("not an RSA public key")
    return key


@dataclasses.dataclass(frozen=True)
class Verdict:
    """`reason` is None when the token is accepted; `permission` tells PERMISSION_DENIED (a good
    token, but not for this call) from UNAUTHENTICATED (no usable token)."""

    reason: str | None = None
    detail: str = ""
    permission: bool = False

    @property
    def ok(self) -> bool:
        return self.reason is None


ACCEPTED = Verdict()


def _unauthenticated(reason: str, detail: str) -> Verdict:
    return Verdict(reason, detail, permission=False)


def _denied(reason: str, detail: str) -> Verdict:
    return Verdict(reason, detail, permission=True)


class TokenVerifier:
    """Judges a call's `authorization` values for an entity, as Fleet Engine does.

    `keys` are (kid, public key) pairs; a pair with kid None accepts any `kid` (the Swift stand-in
    provider publishes its key as bare PEM, without its random key id). A key added with an
    `account` signs for that service account alone, as Fleet Engine looks up the keys of the
    account named in `iss` (a JWKS per account, `load_jwks`).
    """

    def __init__(self, keys: list[tuple[str | None, rsa.RSAPublicKey]], *, skew: float = ALLOWED_CLOCK_SKEW):
        self.keys = [(kid, key, None) for kid, key in keys]
        self.skew = skew

    def add_key(self, kid: str | None, key: rsa.RSAPublicKey, account: str | None = None) -> None:
        self.keys.append((kid, key, account))

    def check_metadata(self, authorization_values: list[str], entity: Entity, now: float) -> Verdict:
        if not authorization_values:
            return _unauthenticated("missing_token", "no authorization metadata")
        if len(authorization_values) > 1:
            return _unauthenticated("multiple_authorization_headers", f"{len(authorization_values)} authorization values")
        value = authorization_values[0]
        if value[:7].lower() != "bearer ":
            return _unauthenticated("missing_token", "the authorization value is not a Bearer token")
        return self.check_token(value[7:].strip(), entity, now)

    def check_token(self, token: str, entity: Entity, now: float) -> Verdict:
        if token.startswith(ACCESS_TOKEN_PREFIX):
            return self.check_access_token(token, entity, now)
        parts = token.split(".")
        if len(parts) != 3:
            return _unauthenticated("malformed_token", f"a JWT has 3 parts, this has {len(parts)}")
        try:
            header = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except ValueError:
            return _unauthenticated("malformed_token", "a part is not base64url JSON")
        if not isinstance(header, dict) or not isinstance(claims, dict):
            return _unauthenticated("malformed_token", "header and claims must be JSON objects")
        if header.get("alg") != "RS256":
            return _unauthenticated("unsupported_algorithm", "alg must be RS256")
        if "typ" in header and header["typ"] != "JWT":
            return _unauthenticated("malformed_token", "typ must be JWT")
        issuer = claims.get("iss")
        candidates = [key for kid, key, account in self.keys
                      if (kid is None or kid == header.get("kid")) and (account is None or account == issuer)]
        if not candidates:
            return _unauthenticated("unknown_key_id", "kid is not a known key of the account in iss")
        signing_input = (parts[0] + "." + parts[1]).encode("ascii")
        if not any(_verifies(key, signing_input, signature) for key in candidates):
            return _unauthenticated("bad_signature", "signature does not verify")

        if claims.get("aud") != AUDIENCE:
            return _unauthenticated("wrong_audience", f"aud must be {AUDIENCE}")
        if not isinstance(issuer, str) or claims.get("sub") != issuer:
            return _unauthenticated("wrong_issuer", "iss and sub must be the same service account")
        expires_at, issued_at = claims.get("exp"), claims.get("iat")
        if not _is_number(expires_at) or not _is_number(issued_at):
            return _unauthenticated("malformed_token", "iat and exp must be numbers")
        if expires_at <= now:
            return _unauthenticated("expired", f"expired {int(now - expires_at)} s ago")
        if issued_at > now + self.skew:
            return _unauthenticated("issued_in_future", f"iat is {int(issued_at - now)} s in the future")
        lifetime = expires_at - issued_at
        if not 0 < lifetime <= MAXIMUM_LIFETIME:
            return _unauthenticated("bad_lifetime", f"exp - iat is {int(lifetime)} s, must be 1 to {MAXIMUM_LIFETIME}")
        if project_of(issuer) != entity.provider:
            return _denied("wrong_project", f"the service account is not one of project {entity.provider}")

        claim = claims.get("authorization")
        if not isinstance(claim, dict):
            return _denied("entity_not_covered", "no usable authorization claim")
        if not covers(claim, entity):
            return _denied("entity_not_covered", f"the authorization claim does not cover {entity.type} {entity.id}")
        return ACCEPTED


    def check_access_token(self, token: str, entity: Entity, now: float) -> Verdict:
        """A stand-in Google access token (`--signer adc`): `ya29.standin.<claims>.<RS256 by the
        account's key>`, as `fleet-token-proxy stand-in google` mints them. It acts for its
        account on every entity of the account's project, as an admin role's token does."""
        parts = token[len(ACCESS_TOKEN_PREFIX):].split(".")
        try:
            if len(parts) != 2:
                raise ValueError("two parts")
            claims = json.loads(b64url_decode(parts[0]))
            signature = b64url_decode(parts[1])
        except ValueError:
            return _unauthenticated("malformed_token", "not a stand-in access token")
        if not isinstance(claims, dict):
            return _unauthenticated("malformed_token", "the access token's claims are not an object")
        account = claims.get("sub")
        candidates = [key for kid, key, owner in self.keys if kid == claims.get("kid") and (owner is None or owner == account)]
        if not candidates:
            return _unauthenticated("unknown_key_id", "the access token's key is not a known key of its account")
        signed = (ACCESS_TOKEN_PREFIX + parts[0]).encode("ascii")
        if not any(_verifies(key, signed, signature) for key in candidates):
            return _unauthenticated("bad_signature", "the access token's signature does not verify")
        if not _is_number(claims.get("exp")) or claims["exp"] <= now:
            return _unauthenticated("expired", "the access token expired")
        if not isinstance(account, str) or project_of(account) != entity.provider:
            return _denied("wrong_project", f"the service account is not one of project {entity.provider}")
        return ACCEPTED


# What the stand-in Google's access tokens start with (Sources/FleetTokenProxyStandIns/StandInAccessToken.swift).
ACCESS_TOKEN_PREFIX = "ya29.standin."


def covers(claim: dict, entity: Entity) -> bool:
    """Whether an `authorization` claim lets a token act on `entity`. A fleet call needs
    wildcards and no claim naming a single entity: a vehicle's token may not list every trip."""
    if entity.type == FLEET:
        named = [value for field, value in claim.items() if field in CLAIM_FIELDS.values()]
        named += list(claim.get("taskids") or [])
        return bool(named) and all(value == "*" for value in named)

    def matches(value) -> bool:
        return value == entity.id or value == "*"

    if matches(claim.get(CLAIM_FIELDS[entity.type])):
        return True
    return entity.type == TASK and any(matches(value) for value in claim.get("taskids") or [])


def _verifies(key: rsa.RSAPublicKey, signing_input: bytes, signature: bytes) -> bool:
    try:
        key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
        return True
    except InvalidSignature:
        return False


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)

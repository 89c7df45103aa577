#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (Fuzz/Corpus/<target>/): real Fleet Engine calls of
every docs/CONTRACT.md §3 REST route and gRPC method, provider answers in both expiry conventions, tricky
heads. Run from anywhere; the seeds are committed, so run it again only when it changes."""
import base64, gzip, hashlib, json, os, struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Corpus")
P = "my-project"


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


# REST routes of docs/CONTRACT.md §3: (method, target).
REST = [
    ("GET", f"/v1/providers/{P}/vehicles/v-1"), ("PUT", f"/v1/providers/{P}/vehicles/v-1?updateMask=state"),
    ("DELETE", f"/v1/providers/{P}/vehicles/v-1"), ("POST", f"/v1/providers/{P}/vehicles/v-1:updateAttributes"),
    ("POST", f"/v1/providers/{P}/vehicles/v-1:updateLocation"), ("POST", f"/v1/providers/{P}/vehicles?vehicleId=v-2"),
    ("GET", f"/v1/providers/{P}/trips/t-1"), ("PUT", f"/v1/providers/{P}/trips/t%2D1"), ("DELETE", f"/v1/providers/{P}/trips/t-1"),
    ("POST", f"/v1/providers/{P}/trips?tripId=t-2"), ("GET", f"/v1/providers/{P}/deliveryVehicles/dv-1"),
    ("PATCH", f"/v1/providers/{P}/deliveryVehicles/dv-1?updateMask=remaining_vehicle_journey_segments"),
    ("DELETE", f"/v1/providers/{P}/deliveryVehicles/dv-1"), ("POST", f"/v1/providers/{P}/deliveryVehicles?deliveryVehicleId=dv-2"),
    ("GET", f"/v1/providers/{P}/tasks/task-1"), ("PATCH", f"/v1/providers/{P}/tasks/task-1"), ("DELETE", f"/v1/providers/{P}/tasks/task-1"),
    ("POST", f"/v1/providers/{P}/tasks?taskId=task-2"), ("GET", f"/v1/providers/{P}/taskTrackingInfo/track-1"),
    ("GET", f"/v1/providers/{P}/vehicles?pageSize=10"), ("GET", f"/v1/providers/{P}/trips"),
    ("GET", f"/v1/providers/{P}/deliveryVehicles?filter=a%3Db"), ("GET", f"/v1/providers/{P}/tasks"),
    ("POST", f"/v1/providers/{P}/vehicles:search"), ("POST", f"/v1/providers/{P}/trips:search"),
    ("POST", f"/v1/providers/{P}/tasks:batchCreate"), ("POST", f"/v1/providers/{P}/billableTrips/b-1:report"),
    ("GET", f"/v1/providers/caf%C3%A9/vehicles/%E2%82%AC+1?key=x&vehicle_id=v"), ("POST", f"/v1/providers/{P}/vehicles?vehicle_id=a+b"),
]
for method, target in REST:
    write("rest-route", f"{method}\n{target}")
    body = "" if method in ("GET", "DELETE") else '{"name":"x"}'
    head = f"{method} {target} HTTP/1.1\r\nHost: localhost:8080\r\nContent-Type: application/json\r\n"
    if body:
        write("request-head", head + f"Content-Length: {len(body)}\r\n\r\n{body}")
        write("request-head", head + f"Transfer-Encoding: chunked\r\n\r\n{len(body):x}\r\n{body}\r\n0\r\n\r\n")
    else:
        write("request-head", head + "Accept: */*\r\nConnection: keep-alive\r\n\r\n")

TRICKY_REQUESTS = [
    "GET / HTTP/1.0\r\n\r\n", "\r\n\r\nGET /a HTTP/1.1\r\nHost: h\r\n\r\n",
    "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
    "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    "GET /x HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", "GET /x HTTP/1.1\nHost: h\n\n",
    "GET /x HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", "GET /x HTTP/1.1\r\nHost : h\r\n\r\n",
    "GET /x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nX-Empty:\r\nX-Tab:\tv\t\r\n\r\n",
    "GET /x HTTP/1.1\r\nHost: h\r\nX-Utf8: caf\xc3\xa9\r\n\r\n", "GET  /x HTTP/1.1\r\nHost: h\r\n\r\n",
    "GET http://h/x HTTP/1.1\r\nHost: h\r\n\r\n", "GET /x HTTP/2.0\r\nHost: h\r\n\r\n",
    "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\nabc", "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 9007199254740993\r\n\r\n",
    "GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "GET /x HTTP/1.1\r\nHost: h\r\nConnection: close, upgrade\r\n\r\n",
]
for t in TRICKY_REQUESTS:
    write("request-head", t)

RESPONSES = [
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 304\r\nETag: x\r\n\r\n", "HTTP/1.0 200 OK\r\n\r\nbody", "HTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
    "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n\r\n",
    "HTTP/1.1 200 \xc3\xa9t\xc3\xa9\r\nKeep-Alive: timeout=5\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n",
]
for r in RESPONSES:
    write("response-head", r)

CHUNKED = [
    "0\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n", "5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\n", "A\r\n0123456789\r\n0\r\n\r\nGET",
    "5 ;x\r\nhello\r\n0\r\n\r\n", "fffffffffffffffff\r\n", "0000000005\r\nhello\r\n0\r\n\r\n", "5\nhello\r\n0\r\n\r\n",
    "5\r\nhelloX\r\n", "0\r\nA: b\r\nC: d\r\n\r\n", "-1\r\n", "0x5\r\nhello\r\n0\r\n\r\n", "1\r\na\r\n1\r\nb\r\n0\r\n\r\n",
]
for c in CHUNKED:
    write("chunked-body", c)


# gRPC: a method selector byte (index into GRPCMethodTable.rules, table order) + a framed message.
def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def ld(field, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def frame(message, compressed=False):
    if compressed:
        message = gzip.compress(message, mtime=0)
    return bytes([1 if compressed else 0]) + struct.pack(">I", len(message)) + message


# (method, message) in the order of GRPCMethodTable.rules, so the selector byte is the index.
GRPC = [
    ("GetVehicle", ld(3, f"providers/{P}/vehicles/v-1")),
    ("UpdateVehicle", ld(3, f"providers/{P}/vehicles/v-1") + ld(4, ld(1, "x"))),
    ("UpdateVehicleAttributes", ld(3, f"providers/{P}/vehicles/v-1")),
    ("DeleteVehicle", ld(2, f"providers/{P}/vehicles/v-1")),
    ("CreateVehicle", ld(3, f"providers/{P}") + ld(4, "v-2") + ld(5, b"")),
    ("ListVehicles", ld(1, f"providers/{P}") + varint(2 << 3) + varint(10)),
    ("SearchVehicles", ld(3, f"providers/{P}") + b"\x19" + b"\x00" * 8 + b"\x25" + b"\x00" * 4),
    ("GetTrip", ld(3, f"providers/{P}/trips/t-1")), ("UpdateTrip", ld(3, f"providers/{P}/trips/t-1")),
    ("DeleteTrip", ld(2, f"providers/{P}/trips/t-1")), ("CreateTrip", ld(3, f"providers/{P}") + ld(5, "t-2")),
    ("SearchTrips", ld(3, f"providers/{P}")), ("ReportBillableTrip", ld(2, f"providers/{P}/billableTrips/b-1")),
    ("GetDeliveryVehicle", ld(3, f"providers/{P}/deliveryVehicles/dv-1")),
    ("DeleteDeliveryVehicle", ld(2, f"providers/{P}/deliveryVehicles/dv-1")),
    ("CreateDeliveryVehicle", ld(3, f"providers/{P}") + ld(4, "dv-2")),
    ("UpdateDeliveryVehicle", ld(3, ld(1, f"providers/{P}/deliveryVehicles/dv-1")) + ld(4, ld(1, "x"))),
    ("ListDeliveryVehicles", ld(3, f"providers/{P}")),
    ("GetTask", ld(3, f"providers/{P}/tasks/task-1")), ("DeleteTask", ld(2, f"providers/{P}/tasks/task-1")),
    ("CreateTask", ld(3, f"providers/{P}") + ld(5, "task-2")),
    ("UpdateTask", ld(3, ld(1, f"providers/{P}/tasks/task-1"))),
    ("ListTasks", ld(3, f"providers/{P}")), ("BatchCreateTasks", ld(3, f"providers/{P}") + ld(4, ld(1, "x"))),
    ("GetTaskTrackingInfo", ld(3, f"providers/{P}/taskTrackingInfo/track-1")),
]
for selector in range(2 * len(GRPC)):
    method, message = GRPC[selector % len(GRPC)]
    write("grpc-first-message", bytes([selector]) + frame(message, compressed=selector >= len(GRPC)))
write("grpc-first-message", b"\x00" + frame(ld(3, f"providers/{P}/vehicles/v-1") * 2))
write("grpc-first-message", b"\x00" + frame(ld(3, ld(1, "a") + ld(1, "b"))))
write("grpc-first-message", b"\x00" + frame(varint(3 << 3 | 2) + varint(2**40)))


# Provider answers: both expiry conventions (seconds from now, absolute epoch seconds and
# milliseconds, RFC 3339), JWT exp, default and configured field names.
def jwt(claims):
    enc = lambda o: base64.urlsafe_b64encode(json.dumps(o).encode()).rstrip(b"=").decode()
    return f"{enc({'alg': 'RS256', 'typ': 'JWT'})}.{enc(claims)}.c2lnbmF0dXJl"


NOW = 1795341600
TOKEN = jwt({"exp": NOW + 3600, "iat": NOW, "aud": "https://fleetengine.googleapis.com/",
             "authorization": {"vehicleid": "v-1", "taskids": ["t-1"]}})
ANSWERS = [
    {"token": TOKEN, "expiresInSeconds": 3600}, {"jwt": TOKEN, "expirationTimestamp": NOW + 3600},
    {"access_token": "opaque-token", "expires_at": (NOW + 3600) * 1000}, {"token": "opaque", "expiration": "2026-11-22T11:00:00Z"},
    {"token": "opaque", "expires_in": "3600"}, {"token": "opaque", "TOKEN_EXPIRATION": "2026-11-22T11:00:00.250+01:00"},
    {"token": jwt({"exp": NOW - 10})}, {"token": "a b", "expires_in": 60}, {"token": "x", "expires_in": True},
    {"token": "x", "expires_in": -1}, {"token": "x", "expires_in": 1e308}, {"token": None, "jwt": "y", "exp": 5},
    {"token": "x", "expirationTimestamp": "2026-02-29T00:00:00Z"},
]
for a in ANSWERS:
    write("provider-answer", json.dumps(a))
write("provider-answer", '{"token":"\\u0000x","expires_in":60}')
write("provider-answer", TOKEN)

HEADER_FILES = [
    "Authorization: Bearer backend-secret\n", "\ufeff# comment\r\nX-Api-Key: k\r\n\r\n  X-Other:\tv \n",
    "Host: evil\n", "X-A: b\rc\n", "X-Empty:\n", "Bad Name: v\n", "X-Ctl: a\x01b\n", "TE: trailers\n",
]
for h in HEADER_FILES:
    write("header-file", h)

# Service-account key files (--signer key-file:): Google's shape, with a made-up PEM body (the
# reader checks the PEM's first line; OpenSSL reads the rest), and broken ones.
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC-not-a-key\n-----END PRIVATE KEY-----\n"
KEY = {"type": "service_account", "project_id": P, "private_key_id": "0123456789abcdef0123456789abcdef01234567",
       "private_key": PEM, "client_email": f"fleet-signer@{P}.iam.gserviceaccount.com", "client_id": "1234567890",
       "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token"}
KEYS = [
    KEY, {k: v for k, v in KEY.items() if k not in ("type", "token_uri")}, dict(KEY, type="authorized_user"),
    dict(KEY, client_email="no-at-sign"), dict(KEY, private_key_id=""), dict(KEY, private_key_id=7),
    dict(KEY, private_key=PEM.replace("PRIVATE KEY", "RSA PRIVATE KEY")), dict(KEY, token_uri=None),
    dict(KEY, client_email="a\u00e9@p.iam.gserviceaccount.com"),
]
for k in KEYS:
    write("service-account-key", json.dumps(k, indent=2))
write("service-account-key", json.dumps(KEY).replace("\\n", "\\u000a"))

# Access-token answers (--signer adc): the OAuth token endpoint's and the metadata server's
# (one shape, RFC 6749 §5.1), refusals (§5.2, and Google APIs' nested error), broken ones.
ACCESS = {"access_token": "ya29.c.b0AXv0zTP-made-up", "expires_in": 3599, "token_type": "Bearer"}
ACCESS_ANSWERS = [
    ACCESS, dict(ACCESS, scope="https://www.googleapis.com/auth/cloud-platform"), dict(ACCESS, expires_in=0),
    dict(ACCESS, expires_in="3599"), dict(ACCESS, token_type="MAC"), dict(ACCESS, access_token="ya29 with space"),
    {"error": "invalid_grant", "error_description": "Invalid JWT Signature."},
    {"error": {"code": 403, "message": "Permission 'iam.serviceAccounts.getAccessToken' denied", "status": "PERMISSION_DENIED"}},
    {"error": "bad\r\n", "error_description": "x" * 300},
]
for a in ACCESS_ANSWERS:
    write("access-token-answer", json.dumps(a))
write("access-token-answer", "Missing Metadata-Flavor:Google header.")

# ADC files: a service-account key and a user's gcloud login, and types the sidecar refuses.
USER = {"type": "authorized_user", "client_id": "764086051850-made-up.apps.googleusercontent.com",
        "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty", "refresh_token": "1//0made-up-refresh", "quota_project_id": P}
ADC_FILES = [
    KEY, USER, {k: v for k, v in USER.items() if k != "quota_project_id"}, dict(USER, token_uri="https://oauth2.googleapis.com/token"),
    dict(USER, client_secret=""), dict(USER, refresh_token=7), {"type": "external_account", "audience": "//iam"},
    {"type": "impersonated_service_account"}, dict(USER, quota_project_id="a b"),
]
for f in ADC_FILES:
    write("adc-file", json.dumps(f, indent=2))
IMPERSONATION_URL = f"https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/fleet-admin@{P}.iam.gserviceaccount.com:generateAccessToken"
IMPERSONATED = {"type": "impersonated_service_account", "service_account_impersonation_url": IMPERSONATION_URL,
                "delegates": [], "quota_project_id": P, "source_credentials": {k: v for k, v in USER.items() if k != "quota_project_id"}}
IMPERSONATED_FILES = [
    IMPERSONATED, dict(IMPERSONATED, source_credentials=KEY), dict(IMPERSONATED, delegates=[f"projects/-/serviceAccounts/hop@{P}.iam.gserviceaccount.com"]),
    dict(IMPERSONATED, service_account_impersonation_url=IMPERSONATION_URL.replace(":generateAccessToken", ":signJwt")),
    dict(IMPERSONATED, source_credentials={"type": "external_account"}), dict(IMPERSONATED, delegates="x"),
]
for f in IMPERSONATED_FILES:
    write("adc-file", json.dumps(f, indent=2))
# external_account (workload identity federation), as create-cred-config writes them.
POOL = "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/pool/providers/oidc"
EXTERNAL = {"type": "external_account", "audience": POOL, "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": "https://sts.googleapis.com/v1/token", "credential_source": {"file": "/var/run/secrets/tokens/gcp"}}
AZURE = {"url": "http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01&resource=api://x",
         "headers": {"Metadata": "True"}, "format": {"type": "json", "subject_token_field_name": "access_token"}}
WORKFORCE = "//iam.googleapis.com/locations/global/workforcePools/pool/providers/oidc"
EXTERNAL_FILES = [
    EXTERNAL, dict(EXTERNAL, credential_source=AZURE),
    dict(EXTERNAL, service_account_impersonation_url=IMPERSONATION_URL, service_account_impersonation={"token_lifetime_seconds": 1800}),
    dict(EXTERNAL, audience=WORKFORCE, workforce_pool_user_project="123", quota_project_id=P),
    dict(EXTERNAL, workforce_pool_user_project="123"), dict(EXTERNAL, credential_source={"file": "/t", "url": "http://x/"}),
    dict(EXTERNAL, credential_source={"environment_id": "aws1", "region_url": "http://169.254.169.254/latest/meta-data/placement/availability-zone"}),
    dict(EXTERNAL, credential_source={"executable": {"command": "/bin/id-token"}}),
    dict(EXTERNAL, credential_source=dict(AZURE, headers={"Metadata": "a\r\nX-Injected: 1"})),
    dict(EXTERNAL, service_account_impersonation={"token_lifetime_seconds": 60}), dict(EXTERNAL, client_id="c", client_secret="s"),
    dict(EXTERNAL, credential_source={"executable": {"command": "/usr/local/bin/id-token --audience 'a b' \\\"q\\\"", "timeout_millis": 5000,
                                                     "output_file": "/run/id-token.json"}}),
    dict(EXTERNAL, credential_source={"executable": {"command": "/bin/t 'unclosed"}}),
    dict(EXTERNAL, credential_source={"executable": {"command": "/bin/t", "timeout_millis": 1000}}),
    dict(EXTERNAL, subject_token_type="urn:ietf:params:aws:token-type:aws4_request", credential_source={
        "environment_id": "aws1", "region_url": "http://169.254.169.254/latest/meta-data/placement/availability-zone",
        "url": "http://169.254.169.254/latest/meta-data/iam/security-credentials",
        "regional_cred_verification_url": "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15",
        "imdsv2_session_token_url": "http://169.254.169.254/latest/api/token"}),
    dict(EXTERNAL, credential_source={"environment_id": "aws2", "regional_cred_verification_url": "https://sts.{region}.amazonaws.com"}),
    dict(EXTERNAL, credential_source={"environment_id": "aws1", "regional_cred_verification_url": "http://sts.{region}.amazonaws.com"}),
    # X.509 (create-cred-config --credential-cert-path): the default certificate config, or one named.
    dict(EXTERNAL, subject_token_type="urn:ietf:params:oauth:token-type:mtls", token_url="https://sts.mtls.googleapis.com/v1/token",
         credential_source={"certificate": {"use_default_certificate_config": True, "trust_chain_path": "/etc/fleet/chain.pem"}}),
    dict(EXTERNAL, credential_source={"certificate": {"certificate_config_location": "/etc/fleet/certificate_config.json"}}),
    dict(EXTERNAL, credential_source={"certificate": {"certificate_config_location": "/c.json", "use_default_certificate_config": True}}),
    dict(EXTERNAL, credential_source={"certificate": {"use_default_certificate_config": "true"}, "file": "/t"}),
]
for f in EXTERNAL_FILES:
    write("adc-file", json.dumps(f, indent=2))



# IAM signJwt answers (--signer iam:EMAIL): IAM writes the header (RS256, kid = keyId).
def b64url(data):
    return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")


def signed_jwt(kid="3f1e9a", alg="RS256", claims=None):
    claims = claims or {"iss": f"fleet-signer@{P}.iam.gserviceaccount.com", "sub": f"fleet-signer@{P}.iam.gserviceaccount.com",
                        "aud": "https://fleetengine.googleapis.com/", "iat": 1767225540, "exp": 1767229140,
                        "authorization": {"vehicleid": "vehicle-1"}}
    header = b64url(json.dumps({"alg": alg, "kid": kid, "typ": "JWT"}))
    return header + "." + b64url(json.dumps(claims)) + ".c2lnbmF0dXJl"


SIGN_JWT_ANSWERS = [
    {"keyId": "3f1e9a", "signedJwt": signed_jwt()}, {"keyId": "other", "signedJwt": signed_jwt()},
    {"keyId": "3f1e9a", "signedJwt": signed_jwt(alg="none")}, {"keyId": "3f1e9a", "signedJwt": "not-a-jwt"},
    {"keyId": "3f1e9a", "signedJwt": signed_jwt(claims={"iss": "a"})}, {"keyId": "3f1e9a"}, {"signedJwt": signed_jwt()},
    {"keyId": "3f1e9a", "signedJwt": signed_jwt(claims={"exp": "soon", "taskids": ["*"]})},
    {"error": {"code": 403, "message": "Permission 'iam.serviceAccounts.signJwt' denied", "status": "PERMISSION_DENIED"}},
]
for a in SIGN_JWT_ANSWERS:
    write("sign-jwt-answer", json.dumps(a))

# ID tokens (--provider-id-token-audience): the metadata server's text, the token endpoint's JSON.
ID_CLAIMS = {"iss": "https://accounts.google.com", "aud": "https://provider-abc-uc.a.run.app", "sub": "1",
             "iat": 1767225540, "exp": 1767229140}
ID_ANSWERS = [
    signed_jwt(claims=ID_CLAIMS), signed_jwt(claims=ID_CLAIMS) + "\n", json.dumps({"id_token": signed_jwt(claims=ID_CLAIMS)}),
    signed_jwt(claims=dict(ID_CLAIMS, exp=1767225000)), signed_jwt(claims=dict(ID_CLAIMS, exp="later")),
    json.dumps({"access_token": "ya29.x"}), "non-empty audience parameter required", signed_jwt(claims=ID_CLAIMS) + " x",
]
for a in ID_ANSWERS:
    write("id-token-answer", a)
write("id-token-answer", json.dumps({"token": signed_jwt(claims=ID_CLAIMS)}))

# Impersonation (impersonated_service_account ADC files): IAM generateAccessToken's answers,
# read at the invariant's fixed now, 2026-01-01T00:00:00Z.
GENERATED = {"accessToken": "ya29.c.impersonated-made-up", "expireTime": "2026-01-01T01:00:00Z"}
GENERATED_ANSWERS = [
    GENERATED, dict(GENERATED, expireTime="2026-01-01T00:59:59.5+00:00"), dict(GENERATED, expireTime="2026-01-01T01:00:00-01:00"),
    dict(GENERATED, expireTime="2025-12-31T23:00:00Z"), dict(GENERATED, expireTime="2026-01-02T01:00:00Z"),
    dict(GENERATED, expireTime=1767229200), dict(GENERATED, accessToken="ya29 with space"), {"expireTime": "2026-01-01T01:00:00Z"},
    dict(GENERATED, expireTime="2026-02-30T01:00:00Z"),
    {"error": {"code": 403, "message": "Permission 'iam.serviceAccounts.getAccessToken' denied", "status": "PERMISSION_DENIED"}},
]
for a in GENERATED_ANSWERS:
    write("generate-access-token-answer", json.dumps(a))

# Subject tokens (credential_source file or url): an OIDC token as text, as JSON, broken ones.
OIDC = signed_jwt(claims={"iss": "https://token.actions.githubusercontent.com", "aud": POOL, "sub": "repo:o/r", "exp": 1767229140})
SUBJECT_TOKENS = [
    OIDC, OIDC + "\n", OIDC + "\r\n", json.dumps({"id_token": OIDC}), json.dumps({"access_token": OIDC}),
    json.dumps({"id_token": OIDC + " tail"}), "", "\n", OIDC + " tail", json.dumps({"id_token": 7}),
]
for t in SUBJECT_TOKENS:
    write("subject-token", t)

# Pluggable-auth executables' answers (stdout or the output file), read at 2026-01-01T00:00:00Z.
EXE = {"version": 1, "success": True, "token_type": "urn:ietf:params:oauth:token-type:jwt", "id_token": OIDC, "expiration_time": 1767229140}
EXE_ANSWERS = [
    EXE, {k: v for k, v in EXE.items() if k != "expiration_time"}, dict(EXE, token_type="urn:ietf:params:oauth:token-type:id_token"),
    {"version": 1, "success": True, "token_type": "urn:ietf:params:oauth:token-type:saml2", "saml_response": "PHNhbWxwOlJlc3BvbnNlPg==", "expiration_time": 1767229140},
    dict(EXE, expiration_time=1767225000), dict(EXE, version=2), dict(EXE, success="true"),
    {"version": 1, "success": False, "code": "401", "message": "Caller not authorized."}, {"version": 1, "success": False},
    dict(EXE, token_type="urn:ietf:params:oauth:token-type:access_token"), dict(EXE, id_token=OIDC + " x"),
]
for a in EXE_ANSWERS:
    write("executable-response", json.dumps(a))

# The EC2 instance metadata service's role credentials (an AWS credential_source).
AWS_CREDS = {"Code": "Success", "LastUpdated": "2026-01-01T00:00:00Z", "Type": "AWS-HMAC", "AccessKeyId": "ASIAMADEUPEXAMPLE01",
             "SecretAccessKey": "made/up+secret/key0123456789abcdefghij", "Token": "IQoJb3JpZ2luX2VjEMadeUpSessionToken==",
             "Expiration": "2026-01-01T06:00:00Z"}
AWS_ANSWERS = [
    AWS_CREDS, {k: v for k, v in AWS_CREDS.items() if k != "Token"}, dict(AWS_CREDS, Code="Failure"), {"AccessKeyId": "A"},
    dict(AWS_CREDS, SecretAccessKey="with space in it and long enough"), dict(AWS_CREDS, Token=7), dict(AWS_CREDS, AccessKeyId=""),
    {"Code": "Success", "Message": "The instance profile has no role"},
]
for a in AWS_ANSWERS:
    write("aws-credentials-answer", json.dumps(a))

# Certificate configs gcloud writes for an X.509 credential_source (cert_configs.workload).
WORKLOAD = {"cert_path": "/etc/fleet/device.pem", "key_path": "/etc/fleet/device.key"}
CERT_CONFIGS = [
    {"version": 1, "cert_configs": {"workload": WORKLOAD}, "libs": {}},
    {"cert_configs": {"workload": dict(WORKLOAD, cert_path="/var/run/secrets/workload-spiffe-credentials/certificates.pem")}},
    {"cert_configs": {"workload": {"cert_path": "/etc/fleet/device.pem"}}}, {"cert_configs": {"keychain": {}}},
    {"cert_configs": {"workload": dict(WORKLOAD, key_path="")}}, {"cert_configs": {"workload": dict(WORKLOAD, cert_path="/a\u0000b")}},
    {"cert_configs": {"workload": dict(WORKLOAD, key_path=7)}}, {"cert_configs": []}, [],
    {"cert_configs": {"workload": dict(WORKLOAD, cert_path="/home/d\u00e9j\u00e0 vu/cert.pem")}},
]
for c in CERT_CONFIGS:
    write("certificate-config", json.dumps(c))


# HTTP/2 answer heads as field lists (per field: name length, value length, name, value), for
# the translation to an HTTP/1.1 head.
def h2_fields(*fields):
    out = b""
    for name, value in fields:
        name, value = name.encode("latin-1"), value.encode("latin-1")
        out += bytes([len(name), len(value)]) + name + value
    return out


H2_HEADS = [
    [(":status", "200"), ("content-type", "application/json"), ("content-length", "2")],
    [(":status", "404"), ("content-type", "application/json")],
    [(":status", "204")], [(":status", "20")], [("content-type", "text/plain")],
    [(":status", "200"), ("x-bad", "a\r\nSet-Cookie: x"), ("x-nul", "a\x00b"), ("x-ok", "fine")],
    [(":status", "401"), ("www-authenticate", "Bearer"), ("connection", "close"), ("transfer-encoding", "chunked")],
    [(":status", "200"), ("Bad Name", "v"), ("x-ws", " v "), ("x-latin1", "\xff"), ("x-utf8", "\xc3\xa9")],
    [(":status", "503"), ("content-length", "1, 1"), ("retry-after", "1"), ("trailer", "x-t")],
    [(":status", "999"), (":path", "/x"), ("", "v")],
]
for h in H2_HEADS:
    write("h2-response-head", h2_fields(*h))

H2_REQUESTS = [
    [(":method", "GET"), (":path", "/v1/providers/p/vehicles/v"), ("accept", "application/json")],
    [(":method", "PUT"), (":path", "/v1/x"), ("content-type", "application/json"), ("content-length", "2")],
    [(":method", "POST"), (":path", "/v1/x?a=b"), ("cookie", "a=1"), ("x-a", "1"), ("cookie", "b=2")],
    [(":method", "POST"), ("content-length", "1"), ("content-length", "2")],
    [(":method", "POST"), ("transfer-encoding", "chunked"), ("content-length", "5")],
    [(":method", "GET"), ("x-bad", "a\r\nHost: evil"), ("x-nul", "a\x00b")],
    [(":method", "GET / HTTP/1.1\r\n"), (":path", "/x y")],
    [(":method", "DELETE"), ("host", "client"), ("authorization", "Bearer client"), ("te", "trailers"), ("expect", "100-continue")],
    [(":method", "PATCH"), ("Bad Name", "v"), ("x-utf8", "\xc3\xa9"), ("x-latin1", "\xff")],
    [(":path", "*"), ("connection", "close"), ("keep-alive", "1"), ("upgrade", "h2c")],
]
for h in H2_REQUESTS:
    write("h2-request-head", h2_fields(*h))

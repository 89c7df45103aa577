#pragma once
#include <openssl/ssl.h>
#include <sys/socket.h>

/// SSL_set_tlsext_host_name is a macro; Swift cannot call it directly.
int fte_ssl_set_sni(SSL *ssl, const char *host);
/// SSL_CTX_set_min_proto_version is a macro.
int fte_ssl_ctx_set_min_tls12(SSL_CTX *ctx);
/// SSL_CTX_set_mode is a macro; used to allow partial writes from bufferevent_openssl.
void fte_ssl_ctx_set_modes(SSL_CTX *ctx);
/// The hostname check OpenSSL runs during verification (SSL_set1_host is a function,
/// but the flags live behind a macro-heavy API; one wrapper keeps it in one place).
int fte_ssl_set_verify_host(SSL *ssl, const char *host);
/// SSL_CTX_set_max_proto_version is a macro; a TLS 1.2-only server for tests.
int fte_ssl_ctx_set_max_tls12(SSL_CTX *ctx);
/// SSL_CTX_set_session_cache_mode is a macro: a client cache that hands each new session
/// (TLS 1.3 tickets included) to the new-session callback and stores none itself.
void fte_ssl_ctx_set_client_session_cache(SSL_CTX *ctx);
/// SSL_clear_mode is a macro: one busy, long-lived connection keeps its record buffers
/// (SSL_MODE_RELEASE_BUFFERS off) and reads ahead.
void fte_ssl_keep_buffers_read_ahead(SSL *ssl);
/// The git revision the shipped binary was built from, or "unknown" (Sources/CShims/BuildStamp.c).
const char *fte_build_revision(void);
/// The Swift toolchain that built it (`swift --version`), or "unknown".
const char *fte_build_swift_version(void);

#include "CShims.h"
#include <openssl/x509v3.h>

int fte_ssl_set_sni(SSL *ssl, const char *host) {
    return (int)SSL_set_tlsext_host_name(ssl, host);
}

int fte_ssl_ctx_set_min_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

void fte_ssl_ctx_set_modes(SSL_CTX *ctx) {
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
}

int fte_ssl_set_verify_host(SSL *ssl, const char *host) {
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return SSL_set1_host(ssl, host);
}

int fte_ssl_ctx_set_max_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
}

void fte_ssl_ctx_set_client_session_cache(SSL_CTX *ctx) {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
}

void fte_ssl_keep_buffers_read_ahead(SSL *ssl) {
    SSL_clear_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
    SSL_set_read_ahead(ssl, 1);
}

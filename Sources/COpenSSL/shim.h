#ifndef VOICEENGINE_COPENSSL_SHIM_H
#define VOICEENGINE_COPENSSL_SHIM_H
// OpenSSL's libcrypto, for the AES-CTR and AES-GCM that the vendored libsrtp (CSRTP) uses. Nothing in Swift
// calls it directly.
#include <openssl/evp.h>
#endif

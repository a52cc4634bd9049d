#ifndef VOICEENGINE_COPENSSL_SHIM_H
#define VOICEENGINE_COPENSSL_SHIM_H
// OpenSSL's libcrypto: the AES-CTR and AES-GCM that the vendored libsrtp (CSRTP) uses, and the digests and HMACs
// that VoiceCrypto wraps for Swift, and its initialisation (VoiceCrypto's CryptoLibrary).
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#endif

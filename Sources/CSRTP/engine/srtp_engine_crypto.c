/*
 * VoiceEngine's own AES-ICM and HMAC-SHA1 for libsrtp (see ../README.md, "Per-packet crypto"). libsrtp's code stays
 * unmodified: these are registered with its public srtp_replace_cipher_type / srtp_replace_auth_type after
 * srtp_init, which first runs libsrtp's self-tests and known answers on them.
 *
 * Why: the live call's profile put SRTP at 2.2 ms per call-second where the same packets cost 0.4 ms in a tight
 * loop. OpenSSL 3's EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, iv), which libsrtp's aes_icm_ossl.c runs for every
 * packet, dispatches through the provider (parameter lookups for the key and IV lengths, the provider's init), and
 * every one of those functions is cold when a 10 ms tick comes round. Here the key schedule is expanded once into
 * the context and a packet's IV is just a 16-byte XOR: AES-NI on a few round keys, nothing else.
 * libsrtp's HMAC-SHA1 hashes the outer pad anew for every packet with its portable SHA-1; here both pads are
 * hashed once at init and each packet runs OpenSSL's SHA1_Update (its SHA-NI/AVX code) from copies of them.
 * Neither allocates after init (the allocation suites hold srtp_protect/srtp_unprotect at zero).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#define OPENSSL_SUPPRESS_DEPRECATED /* SHA1_Init/Update/Final: the one allocation-free SHA-1 entry in OpenSSL 3 */
#include <openssl/sha.h>
#include <string.h>

#include "alloc.h"
#include "auth.h"
#include "cipher.h"
#include "err.h"
#include "cipher_types.h" /* libsrtp's own types, for the cross-check */
#include "srtp_engine_crypto.h"

/* libsrtp's known answers (crypto/hash/auth_test_cases.c, crypto/cipher/cipher_test_cases.c) */
extern const srtp_auth_test_case_t srtp_hmac_test_case_0;
extern const srtp_cipher_test_case_t srtp_aes_icm_128_test_case_0;
extern const srtp_cipher_test_case_t srtp_aes_icm_256_test_case_0;

/* ---- HMAC-SHA1 from precomputed pads ---- */

typedef struct {
    SHA_CTX inner; /* SHA-1 state after key ^ ipad */
    SHA_CTX outer; /* SHA-1 state after key ^ opad */
    SHA_CTX running;
} engine_hmac_ctx;

extern const srtp_auth_type_t voiceengine_hmac_sha1;

static srtp_err_status_t engine_hmac_alloc(srtp_auth_t **a, int key_len, int out_len)
{
    /* libsrtp's limits: keys and tags of at most 20 octets */
    if (key_len > 20 || out_len > 20) {
        return srtp_err_status_bad_param;
    }
    uint8_t *pointer = (uint8_t *)srtp_crypto_alloc(sizeof(srtp_auth_t) + sizeof(engine_hmac_ctx));
    if (pointer == NULL) {
        return srtp_err_status_alloc_fail;
    }
    *a = (srtp_auth_t *)pointer;
    (*a)->type = &voiceengine_hmac_sha1;
    (*a)->state = pointer + sizeof(srtp_auth_t);
    (*a)->out_len = out_len;
    (*a)->key_len = key_len;
    (*a)->prefix_len = 0;
    return srtp_err_status_ok;
}

static srtp_err_status_t engine_hmac_dealloc(srtp_auth_t *a)
{
    octet_string_set_to_zero(a, sizeof(srtp_auth_t) + sizeof(engine_hmac_ctx));
    srtp_crypto_free(a);
    return srtp_err_status_ok;
}

static srtp_err_status_t engine_hmac_init(void *statev, const uint8_t *key, int key_len)
{
    engine_hmac_ctx *state = (engine_hmac_ctx *)statev;
    uint8_t ipad[64], opad[64];
    if (key_len > 20) {
        return srtp_err_status_bad_param;
    }
    for (int i = 0; i < 64; i++) {
        uint8_t k = i < key_len ? key[i] : 0;
        ipad[i] = k ^ 0x36;
        opad[i] = k ^ 0x5c;
    }
    if (!SHA1_Init(&state->inner) || !SHA1_Update(&state->inner, ipad, 64) || !SHA1_Init(&state->outer) ||
        !SHA1_Update(&state->outer, opad, 64)) {
        return srtp_err_status_auth_fail;
    }
    state->running = state->inner;
    octet_string_set_to_zero(ipad, sizeof(ipad));
    octet_string_set_to_zero(opad, sizeof(opad));
    return srtp_err_status_ok;
}

static srtp_err_status_t engine_hmac_start(void *statev)
{
    engine_hmac_ctx *state = (engine_hmac_ctx *)statev;
    state->running = state->inner;
    return srtp_err_status_ok;
}

static srtp_err_status_t engine_hmac_update(void *statev, const uint8_t *message, int msg_octets)
{
    engine_hmac_ctx *state = (engine_hmac_ctx *)statev;
    if (msg_octets > 0 && !SHA1_Update(&state->running, message, (size_t)msg_octets)) {
        return srtp_err_status_auth_fail;
    }
    return srtp_err_status_ok;
}

static srtp_err_status_t engine_hmac_compute(void *statev, const uint8_t *message, int msg_octets, int tag_len,
                                             uint8_t *result)
{
    engine_hmac_ctx *state = (engine_hmac_ctx *)statev;
    uint8_t inner[SHA_DIGEST_LENGTH], tag[SHA_DIGEST_LENGTH];
    if (tag_len > SHA_DIGEST_LENGTH) {
        return srtp_err_status_bad_param;
    }
    if (engine_hmac_update(state, message, msg_octets) != srtp_err_status_ok || !SHA1_Final(inner, &state->running)) {
        return srtp_err_status_auth_fail;
    }
    SHA_CTX outer = state->outer;
    if (!SHA1_Update(&outer, inner, sizeof(inner)) || !SHA1_Final(tag, &outer)) {
        return srtp_err_status_auth_fail;
    }
    memcpy(result, tag, (size_t)tag_len);
    return srtp_err_status_ok;
}

const srtp_auth_type_t voiceengine_hmac_sha1 = {
    engine_hmac_alloc,   engine_hmac_dealloc,
    engine_hmac_init,    engine_hmac_compute,
    engine_hmac_update,  engine_hmac_start,
    "hmac sha-1 from precomputed pads (OpenSSL SHA1)", &srtp_hmac_test_case_0,
    SRTP_HMAC_SHA1};

/* ---- AES-ICM with AES-NI ---- */

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <immintrin.h>

#define ENGINE_AESNI __attribute__((target("aes,sse4.1")))

typedef struct {
    __m128i round_keys[15]; /* AES-128: 11 used, AES-256: 15 */
    int rounds;             /* 10 or 14 */
    int key_size;           /* 16 or 32 octets */
    uint8_t offset[16];     /* the salt, last two octets zero (RFC 3711 §4.1.1) */
    uint8_t counter[16];    /* next counter block, big-endian */
    uint8_t stream[16];     /* keystream of the block in use */
    unsigned used;          /* octets of `stream` consumed; 16: none left */
} engine_aes_icm_ctx;

extern const srtp_cipher_type_t voiceengine_aes_icm_128;
extern const srtp_cipher_type_t voiceengine_aes_icm_256;

static srtp_err_status_t engine_aes_icm_alloc(srtp_cipher_t **c, int key_len, int tag_len)
{
    (void)tag_len;
    if (key_len != SRTP_AES_ICM_128_KEY_LEN_WSALT && key_len != SRTP_AES_ICM_256_KEY_LEN_WSALT) {
        return srtp_err_status_bad_param;
    }
    /* calloc'd (srtp_crypto_alloc); the __m128i members are only touched with unaligned loads and stores */
    uint8_t *pointer = (uint8_t *)srtp_crypto_alloc(sizeof(srtp_cipher_t) + sizeof(engine_aes_icm_ctx));
    if (pointer == NULL) {
        return srtp_err_status_alloc_fail;
    }
    srtp_cipher_t *cipher = (srtp_cipher_t *)pointer;
    engine_aes_icm_ctx *ctx = (engine_aes_icm_ctx *)(pointer + sizeof(srtp_cipher_t));
    cipher->state = ctx;
    cipher->key_len = key_len;
    if (key_len == SRTP_AES_ICM_128_KEY_LEN_WSALT) {
        cipher->algorithm = SRTP_AES_ICM_128;
        cipher->type = &voiceengine_aes_icm_128;
        ctx->key_size = SRTP_AES_128_KEY_LEN;
        ctx->rounds = 10;
    } else {
        cipher->algorithm = SRTP_AES_ICM_256;
        cipher->type = &voiceengine_aes_icm_256;
        ctx->key_size = SRTP_AES_256_KEY_LEN;
        ctx->rounds = 14;
    }
    ctx->used = 16;
    *c = cipher;
    return srtp_err_status_ok;
}

static srtp_err_status_t engine_aes_icm_dealloc(srtp_cipher_t *c)
{
    if (c == NULL) {
        return srtp_err_status_bad_param;
    }
    octet_string_set_to_zero(c, sizeof(srtp_cipher_t) + sizeof(engine_aes_icm_ctx));
    srtp_crypto_free(c);
    return srtp_err_status_ok;
}

/* One step of the AES-128 key schedule (FIPS-197 §5.2) from aeskeygenassist's output. */
ENGINE_AESNI static inline __m128i expand_step(__m128i key, __m128i assist)
{
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    return _mm_xor_si128(key, assist);
}

#define EXPAND128(i, rcon)                                                                                        \
    rk[i] = expand_step(rk[i - 1], _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[i - 1], rcon), 0xff))
/* AES-256: even round keys take RotWord+SubWord+Rcon of the previous key's last word, odd ones SubWord only. */
#define EXPAND256_EVEN(i, rcon)                                                                                   \
    rk[i] = expand_step(rk[i - 2], _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[i - 1], rcon), 0xff))
#define EXPAND256_ODD(i)                                                                                          \
    rk[i] = expand_step(rk[i - 2], _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[i - 1], 0), 0xaa))

ENGINE_AESNI static void expand_key(engine_aes_icm_ctx *ctx, const uint8_t *key)
{
    __m128i rk[15];
    rk[0] = _mm_loadu_si128((const __m128i *)key);
    if (ctx->key_size == SRTP_AES_128_KEY_LEN) {
        EXPAND128(1, 0x01);
        EXPAND128(2, 0x02);
        EXPAND128(3, 0x04);
        EXPAND128(4, 0x08);
        EXPAND128(5, 0x10);
        EXPAND128(6, 0x20);
        EXPAND128(7, 0x40);
        EXPAND128(8, 0x80);
        EXPAND128(9, 0x1b);
        EXPAND128(10, 0x36);
    } else {
        rk[1] = _mm_loadu_si128((const __m128i *)(key + 16));
        EXPAND256_EVEN(2, 0x01);
        EXPAND256_ODD(3);
        EXPAND256_EVEN(4, 0x02);
        EXPAND256_ODD(5);
        EXPAND256_EVEN(6, 0x04);
        EXPAND256_ODD(7);
        EXPAND256_EVEN(8, 0x08);
        EXPAND256_ODD(9);
        EXPAND256_EVEN(10, 0x10);
        EXPAND256_ODD(11);
        EXPAND256_EVEN(12, 0x20);
        EXPAND256_ODD(13);
        EXPAND256_EVEN(14, 0x40);
    }
    for (int i = 0; i <= ctx->rounds; i++) {
        _mm_storeu_si128(&ctx->round_keys[i], rk[i]);
    }
    memset(rk, 0, sizeof(rk));
}

static srtp_err_status_t engine_aes_icm_context_init(void *cv, const uint8_t *key)
{
    engine_aes_icm_ctx *ctx = (engine_aes_icm_ctx *)cv;
    /* the salt follows the key; counter and offset are salt || 0x0000, as in aes_icm_ossl.c */
    memset(ctx->offset, 0, sizeof(ctx->offset));
    memcpy(ctx->offset, key + ctx->key_size, SRTP_SALT_LEN);
    memcpy(ctx->counter, ctx->offset, sizeof(ctx->counter));
    ctx->used = 16;
    expand_key(ctx, key);
    return srtp_err_status_ok;
}

static srtp_err_status_t engine_aes_icm_set_iv(void *cv, uint8_t *iv, srtp_cipher_direction_t dir)
{
    engine_aes_icm_ctx *ctx = (engine_aes_icm_ctx *)cv;
    (void)dir;
    for (int i = 0; i < 16; i++) {
        ctx->counter[i] = ctx->offset[i] ^ iv[i];
    }
    ctx->used = 16;
    return srtp_err_status_ok;
}

/* The counter block as two big-endian 64-bit halves, incremented as one 128-bit number (as OpenSSL's CTR mode). */
static inline void counter_next(uint8_t counter[16])
{
    for (int i = 15; i >= 0; i--) {
        if (++counter[i] != 0) {
            break;
        }
    }
}

ENGINE_AESNI static inline __m128i encrypt_block(const engine_aes_icm_ctx *ctx, __m128i block)
{
    block = _mm_xor_si128(block, _mm_loadu_si128(&ctx->round_keys[0]));
    for (int r = 1; r < ctx->rounds; r++) {
        block = _mm_aesenc_si128(block, _mm_loadu_si128(&ctx->round_keys[r]));
    }
    return _mm_aesenclast_si128(block, _mm_loadu_si128(&ctx->round_keys[ctx->rounds]));
}

/* Four counter blocks at once: the AES rounds of independent blocks overlap in the pipeline. */
ENGINE_AESNI static inline void encrypt_four(const engine_aes_icm_ctx *ctx, uint8_t counter[16], uint8_t *buf)
{
    __m128i b[4];
    for (int k = 0; k < 4; k++) {
        b[k] = _mm_loadu_si128((const __m128i *)counter);
        counter_next(counter);
    }
    __m128i key = _mm_loadu_si128(&ctx->round_keys[0]);
    for (int k = 0; k < 4; k++) {
        b[k] = _mm_xor_si128(b[k], key);
    }
    for (int r = 1; r < ctx->rounds; r++) {
        key = _mm_loadu_si128(&ctx->round_keys[r]);
        for (int k = 0; k < 4; k++) {
            b[k] = _mm_aesenc_si128(b[k], key);
        }
    }
    key = _mm_loadu_si128(&ctx->round_keys[ctx->rounds]);
    for (int k = 0; k < 4; k++) {
        __m128i stream = _mm_aesenclast_si128(b[k], key);
        __m128i data = _mm_loadu_si128((const __m128i *)(buf + 16 * k));
        _mm_storeu_si128((__m128i *)(buf + 16 * k), _mm_xor_si128(data, stream));
    }
}

/* XORs the keystream into buf, continuing where the last call on this IV stopped (also mid-block). */
ENGINE_AESNI static srtp_err_status_t engine_aes_icm_encrypt(void *cv, unsigned char *buf, unsigned int *enc_len)
{
    engine_aes_icm_ctx *ctx = (engine_aes_icm_ctx *)cv;
    unsigned int n = *enc_len;
    while (n > 0 && ctx->used < 16) {
        *buf++ ^= ctx->stream[ctx->used++];
        n--;
    }
    while (n >= 64) {
        encrypt_four(ctx, ctx->counter, buf);
        buf += 64;
        n -= 64;
    }
    while (n >= 16) {
        __m128i stream = encrypt_block(ctx, _mm_loadu_si128((const __m128i *)ctx->counter));
        counter_next(ctx->counter);
        __m128i data = _mm_loadu_si128((const __m128i *)buf);
        _mm_storeu_si128((__m128i *)buf, _mm_xor_si128(data, stream));
        buf += 16;
        n -= 16;
    }
    if (n > 0) {
        _mm_storeu_si128((__m128i *)ctx->stream, encrypt_block(ctx, _mm_loadu_si128((const __m128i *)ctx->counter)));
        counter_next(ctx->counter);
        for (ctx->used = 0; ctx->used < n; ctx->used++) {
            buf[ctx->used] ^= ctx->stream[ctx->used];
        }
    }
    return srtp_err_status_ok;
}

const srtp_cipher_type_t voiceengine_aes_icm_128 = {
    engine_aes_icm_alloc, engine_aes_icm_dealloc, engine_aes_icm_context_init, 0, engine_aes_icm_encrypt,
    engine_aes_icm_encrypt, engine_aes_icm_set_iv, 0, "AES-128 counter mode with AES-NI",
    &srtp_aes_icm_128_test_case_0, SRTP_AES_ICM_128};

const srtp_cipher_type_t voiceengine_aes_icm_256 = {
    engine_aes_icm_alloc, engine_aes_icm_dealloc, engine_aes_icm_context_init, 0, engine_aes_icm_encrypt,
    engine_aes_icm_encrypt, engine_aes_icm_set_iv, 0, "AES-256 counter mode with AES-NI",
    &srtp_aes_icm_256_test_case_0, SRTP_AES_ICM_256};

static int engine_has_aesni(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("aes") && __builtin_cpu_supports("sse4.1");
}
#else
static int engine_has_aesni(void)
{
    return 0;
}
#endif

/* ---- installation ---- */

static int engine_installed = 0;

int voiceengine_srtp_install_crypto(void)
{
    if (srtp_replace_auth_type(&voiceengine_hmac_sha1, SRTP_HMAC_SHA1) != srtp_err_status_ok) {
        return -1;
    }
    int installed = VOICEENGINE_SRTP_HMAC_SHA1;
    if (engine_has_aesni()) {
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
        if (srtp_replace_cipher_type(&voiceengine_aes_icm_128, SRTP_AES_ICM_128) != srtp_err_status_ok ||
            srtp_replace_cipher_type(&voiceengine_aes_icm_256, SRTP_AES_ICM_256) != srtp_err_status_ok) {
            return -1;
        }
        installed |= VOICEENGINE_SRTP_AESNI_ICM;
#endif
    }
    engine_installed = installed;
    return installed;
}

int voiceengine_srtp_installed_crypto(void)
{
    return engine_installed;
}

/* ---- cross-check against libsrtp's own implementations (tests) ---- */

static uint32_t crosscheck_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

static void crosscheck_fill(uint8_t *bytes, size_t count, uint32_t *state)
{
    for (size_t i = 0; i < count; i++) {
        bytes[i] = (uint8_t)crosscheck_random(state);
    }
}

/* One round of a cipher type over `data` from key and IV, in the given chunks; returns 0 on success. */
static int crosscheck_cipher(const srtp_cipher_type_t *type, int key_len, const uint8_t *key, uint8_t *iv,
                             uint8_t *data, const unsigned *chunks, int chunk_count)
{
    srtp_cipher_t *cipher = NULL;
    if (type->alloc(&cipher, key_len, 0) != srtp_err_status_ok) {
        return -1;
    }
    int failed = type->init(cipher->state, key) != srtp_err_status_ok ||
                 type->set_iv(cipher->state, iv, srtp_direction_encrypt) != srtp_err_status_ok;
    for (int i = 0; i < chunk_count && !failed; i++) {
        unsigned length = chunks[i];
        failed = type->encrypt(cipher->state, data, &length) != srtp_err_status_ok || length != chunks[i];
        data += chunks[i];
    }
    type->dealloc(cipher);
    return failed ? -1 : 0;
}

static int crosscheck_auth(const srtp_auth_type_t *type, const uint8_t *key, int key_len, const uint8_t *message,
                           int length, int split, uint8_t *tag)
{
    srtp_auth_t *auth = NULL;
    if (type->alloc(&auth, key_len, 20) != srtp_err_status_ok) {
        return -1;
    }
    int failed = type->init(auth->state, key, key_len) != srtp_err_status_ok ||
                 type->start(auth->state) != srtp_err_status_ok ||
                 type->update(auth->state, message, split) != srtp_err_status_ok ||
                 type->compute(auth->state, message + split, length - split, 20, tag) != srtp_err_status_ok;
    type->dealloc(auth);
    return failed ? -1 : 0;
}

int voiceengine_srtp_crosscheck(int rounds, uint32_t seed)
{
    int mismatches = 0;
    uint32_t state = seed;
    uint8_t key[SRTP_AES_ICM_256_KEY_LEN_WSALT], iv[16], plain[1600], ours[1600], theirs[1600];
    uint8_t tag_ours[20], tag_theirs[20];
    for (int round = 0; round < rounds; round++) {
        unsigned length = crosscheck_random(&state) % sizeof(plain);
        crosscheck_fill(key, sizeof(key), &state);
        crosscheck_fill(iv, sizeof(iv), &state);
        crosscheck_fill(plain, length, &state);
        /* up to four chunks, so keystream continued mid-block is compared too */
        unsigned chunks[4];
        int chunk_count = 0;
        unsigned left = length;
        while (left > 0 && chunk_count < 3) {
            unsigned take = crosscheck_random(&state) % (left + 1);
            chunks[chunk_count++] = take;
            left -= take;
        }
        chunks[chunk_count++] = left;
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
        if (engine_has_aesni()) {
            const srtp_cipher_type_t *pairs[2][2] = {{&voiceengine_aes_icm_128, &srtp_aes_icm_128},
                                                     {&voiceengine_aes_icm_256, &srtp_aes_icm_256}};
            const int key_lengths[2] = {SRTP_AES_ICM_128_KEY_LEN_WSALT, SRTP_AES_ICM_256_KEY_LEN_WSALT};
            for (int p = 0; p < 2; p++) {
                /* counters near a carry across octets: the low 16 bits of the IV often all ones */
                if (round % 4 == 0) {
                    iv[14] = iv[15] = 0xff;
                }
                memcpy(ours, plain, length);
                memcpy(theirs, plain, length);
                if (crosscheck_cipher(pairs[p][0], key_lengths[p], key, iv, ours, chunks, chunk_count) != 0 ||
                    crosscheck_cipher(pairs[p][1], key_lengths[p], key, iv, theirs, chunks, chunk_count) != 0 ||
                    memcmp(ours, theirs, length) != 0) {
                    mismatches++;
                }
            }
        }
#endif
        int key_len = (int)(crosscheck_random(&state) % 21);
        int split = length > 0 ? (int)(crosscheck_random(&state) % (length + 1)) : 0;
        if (crosscheck_auth(&voiceengine_hmac_sha1, key, key_len, plain, (int)length, split, tag_ours) != 0 ||
            crosscheck_auth(&srtp_hmac, key, key_len, plain, (int)length, split, tag_theirs) != 0 ||
            memcmp(tag_ours, tag_theirs, sizeof(tag_ours)) != 0) {
            mismatches++;
        }
    }
    return mismatches;
}

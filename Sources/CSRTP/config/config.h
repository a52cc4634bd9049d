/*
 * VoiceEngine's build configuration of libsrtp 2.5.0, written by hand in place of the one `./configure
 * --enable-openssl` generates (a SwiftPM C target has no configure step). See ../README.md for why this build:
 * OpenSSL's AES (CTR and GCM) and libsrtp's own HMAC-SHA1, which together make srtp_protect/srtp_unprotect
 * allocation-free.
 */
#ifndef VOICEENGINE_LIBSRTP_CONFIG_H
#define VOICEENGINE_LIBSRTP_CONFIG_H

#if defined(__x86_64__) || defined(__i386__)
#define CPU_CISC 1
#define HAVE_X86 1
#else
#define CPU_RISC 1
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define WORDS_BIGENDIAN 1
#endif

/* Crypto: OpenSSL for AES-ICM and AES-GCM (GCM needs an external library); HMAC-SHA1 is libsrtp's own
 * (crypto/hash/hmac.c + sha1.c are compiled, hmac_ossl.c is not). */
#define OPENSSL 1
#define GCM 1

#define HAVE_ARPA_INET_H 1
#define HAVE_BYTESWAP_H 1
#define HAVE_INET_ATON 1
#define HAVE_INET_PTON 1
#define HAVE_INT16_T 1
#define HAVE_INT32_T 1
#define HAVE_INT8_T 1
#define HAVE_INTTYPES_H 1
#define HAVE_MEMORY_H 1
#define HAVE_NETINET_IN_H 1
#define HAVE_SIGACTION 1
#define HAVE_SOCKET 1
#define HAVE_STDINT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRINGS_H 1
#define HAVE_STRING_H 1
#define HAVE_SYS_SOCKET_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_UIO_H 1
#define HAVE_UINT16_T 1
#define HAVE_UINT32_T 1
#define HAVE_UINT64_T 1
#define HAVE_UINT8_T 1
#define HAVE_UNISTD_H 1
#define HAVE_USLEEP 1
#define STDC_HEADERS 1
#define SIZEOF_UNSIGNED_LONG 8
#define SIZEOF_UNSIGNED_LONG_LONG 8

#define PACKAGE_BUGREPORT "https://github.com/cisco/libsrtp/issues"
#define PACKAGE_NAME "libsrtp2"
#define PACKAGE_STRING "libsrtp2 2.5.0"
#define PACKAGE_TARNAME "libsrtp2"
#define PACKAGE_URL ""
#define PACKAGE_VERSION "2.5.0"

#endif

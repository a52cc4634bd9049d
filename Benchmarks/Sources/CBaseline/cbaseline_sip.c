// libre's SIP parser in a plain C loop, for `voice-bench sip` (see include/cbaseline_sip.h).
#include "cbaseline_sip.h"

#include <dlfcn.h>
#include <string.h>

// libre 1.x's struct mbuf (re_mbuf.h): the only libre type the loop touches.
struct re_mbuf {
    uint8_t *buf;
    size_t size;
    size_t pos;
    size_t end;
};

static int (*re_sip_msg_decode)(void **msgp, struct re_mbuf *mb);
static struct re_mbuf *(*re_mbuf_alloc)(size_t size);
static void *(*re_mem_deref)(void *data);

int32_t cb_sip_open(void) {
    void *library = dlopen("libre.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!library) return -1;
    re_sip_msg_decode = (int (*)(void **, struct re_mbuf *))dlsym(library, "sip_msg_decode");
    re_mbuf_alloc = (struct re_mbuf * (*)(size_t)) dlsym(library, "mbuf_alloc");
    re_mem_deref = (void *(*)(void *))dlsym(library, "mem_deref");
    return re_sip_msg_decode && re_mbuf_alloc && re_mem_deref ? 0 : -1;
}

int64_t cb_sip_parse_loop(const uint8_t *message, size_t length, int64_t iterations) {
    if (!re_sip_msg_decode) return -1;
    struct re_mbuf *mb = re_mbuf_alloc(length);
    if (!mb) return -1;
    memcpy(mb->buf, message, length);
    mb->end = length;
    int64_t decoded = 0;
    for (int64_t i = 0; i < iterations; i++) {
        void *msg = NULL;
        mb->pos = 0;
        if (re_sip_msg_decode(&msg, mb) == 0) decoded++;
        re_mem_deref(msg);
    }
    re_mem_deref(mb);
    return decoded;
}

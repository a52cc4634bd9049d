// What libnice (Debian libnice-dev, the ICE agent GStreamer's webrtcbin uses) costs per packet on the media path,
// next to a plain sendto/recvfrom loop doing the same work: two agents in this process connect over loopback,
// then N datagrams go from A to B through nice_agent_send and B's receive callback; the same N datagrams go
// through two plain UDP sockets. Reports CPU time per packet (process CPU clock: both sides), mallocs per packet
// (malloc/calloc/realloc interposed in this executable, which glib and libnice resolve to), and the threads
// libnice's design needs (a GMainContext iterated by a thread of its own, callbacks on it).
//
// Build and run (ARCHITECTURE.md §5.10 records the figures):
//   cc -O2 -o /tmp/nice-cost Benchmarks/libnice/nice-cost.c $(pkg-config --cflags --libs nice) -lpthread && /tmp/nice-cost
#define _GNU_SOURCE
#include <agent.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
static atomic_long mallocs;
static __thread long threadMallocs;  // the sending thread's share
void *malloc(size_t n) { threadMallocs++; atomic_fetch_add_explicit(&mallocs, 1, memory_order_relaxed); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { threadMallocs++; atomic_fetch_add_explicit(&mallocs, 1, memory_order_relaxed); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { threadMallocs++; atomic_fetch_add_explicit(&mallocs, 1, memory_order_relaxed); return __libc_realloc(p, n); }

enum { N = 200000, SIZE = 172 };  // an Opus 20 ms SRTP packet's size
static atomic_long received;
static atomic_int readyA, readyB, gathered;

static double cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int threads(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static void on_receive(NiceAgent *agent, guint stream, guint component, guint len, gchar *buf, gpointer data) {
    (void)agent; (void)stream; (void)component; (void)len; (void)buf; (void)data;
    atomic_fetch_add(&received, 1);
}

static void on_gathered(NiceAgent *agent, guint stream, gpointer data) { (void)agent; (void)stream; (void)data; atomic_fetch_add(&gathered, 1); }

static void on_state(NiceAgent *agent, guint stream, guint component, guint state, gpointer data) {
    (void)agent; (void)stream; (void)component;
    if (state == NICE_COMPONENT_STATE_READY) atomic_store((atomic_int *)data, 1);
}

static void *run_loop(void *loop) { g_main_loop_run(loop); return NULL; }

static NiceAgent *make_agent(GMainContext *ctx, gboolean controlling, atomic_int *ready, guint *stream) {
    NiceAgent *agent = nice_agent_new(ctx, NICE_COMPATIBILITY_RFC5245);
    g_object_set(agent, "controlling-mode", controlling, "ice-tcp", FALSE, "upnp", FALSE, NULL);
    NiceAddress address;
    nice_address_init(&address);
    nice_address_set_from_string(&address, "127.0.0.1");
    nice_agent_add_local_address(agent, &address);
    *stream = nice_agent_add_stream(agent, 1);
    g_signal_connect(agent, "candidate-gathering-done", G_CALLBACK(on_gathered), NULL);
    g_signal_connect(agent, "component-state-changed", G_CALLBACK(on_state), ready);
    nice_agent_attach_recv(agent, *stream, 1, ctx, on_receive, NULL);
    nice_agent_gather_candidates(agent, *stream);
    return agent;
}

static void introduce(NiceAgent *from, guint fs, NiceAgent *to, guint ts) {
    gchar *ufrag, *pwd;
    nice_agent_get_local_credentials(from, fs, &ufrag, &pwd);
    nice_agent_set_remote_credentials(to, ts, ufrag, pwd);
    GSList *c = nice_agent_get_local_candidates(from, fs, 1);
    nice_agent_set_remote_candidates(to, ts, 1, c);
    g_slist_free_full(c, (GDestroyNotify)nice_candidate_free);
    g_free(ufrag);
    g_free(pwd);
}

static void wait_for(atomic_long *counter, long target) {
    for (int i = 0; i < 20000 && atomic_load(counter) < target; i++) usleep(100);
}

// Sends in bursts of 64 and waits for them, so no socket buffer overflows in either path.
static void nice_path(NiceAgent *a, guint sa, char *buf) {
    for (long i = 0; i < N; i += 64) {
        for (int k = 0; k < 64; k++) nice_agent_send(a, sa, 1, SIZE, buf);
        wait_for(&received, i + 64);
    }
}

static int plain_rx;
static void *plain_receiver(void *arg) {
    (void)arg;
    char buf[2048];
    struct sockaddr_storage from;
    socklen_t len;
    struct pollfd p = {plain_rx, POLLIN, 0};
    while (atomic_load(&received) < N) {
        if (poll(&p, 1, 100) <= 0) continue;
        len = sizeof from;
        while (recvfrom(plain_rx, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, &len) > 0) {
            atomic_fetch_add(&received, 1);
            len = sizeof from;
        }
    }
    return NULL;
}

static void plain_path(char *buf) {
    int tx = socket(AF_INET, SOCK_DGRAM, 0);
    plain_rx = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(plain_rx, (struct sockaddr *)&to, sizeof to);
    socklen_t l = sizeof to;
    getsockname(plain_rx, (struct sockaddr *)&to, &l);
    pthread_t t;
    pthread_create(&t, NULL, plain_receiver, NULL);
    for (long i = 0; i < N; i += 64) {
        for (int k = 0; k < 64; k++) sendto(tx, buf, SIZE, 0, (struct sockaddr *)&to, sizeof to);
        wait_for(&received, i + 64);
    }
    pthread_join(t, NULL);
    close(tx);
    close(plain_rx);
}

int main(void) {
    char buf[SIZE];
    memset(buf, 0x80, sizeof buf);  // first byte 128..191: RTP by RFC 7983, not taken for STUN
    int before = threads();
    GMainContext *ctx = g_main_context_new();
    GMainLoop *loop = g_main_loop_new(ctx, FALSE);
    pthread_t loop_thread;
    pthread_create(&loop_thread, NULL, run_loop, loop);
    atomic_int *ra = &readyA, *rb = &readyB;
    guint sa, sb;
    NiceAgent *a = make_agent(ctx, TRUE, ra, &sa), *b = make_agent(ctx, FALSE, rb, &sb);
    for (int i = 0; i < 20000 && atomic_load(&gathered) < 2; i++) usleep(100);
    introduce(a, sa, b, sb);
    introduce(b, sb, a, sa);
    for (int i = 0; i < 50000 && !(atomic_load(&readyA) && atomic_load(&readyB)); i++) usleep(100);
    if (!(atomic_load(&readyA) && atomic_load(&readyB))) { fprintf(stderr, "agents did not connect\n"); return 1; }
    usleep(200000);  // let nomination settle
    printf("threads: %d before libnice, %d with two connected agents (incl. the GMainLoop thread this program runs)\n",
           before, threads());

    for (int round = 0; round < 3; round++) {
        atomic_store(&received, 0);
        long m0 = atomic_load(&mallocs), t0 = threadMallocs;
        double c0 = cpu();
        nice_path(a, sa, buf);
        long sendMallocs = threadMallocs - t0;
        double niceCPU = (cpu() - c0) / N;
        long niceMallocs = atomic_load(&mallocs) - m0;
        long niceReceived = atomic_load(&received);

        atomic_store(&received, 0);
        m0 = atomic_load(&mallocs);
        c0 = cpu();
        plain_path(buf);
        double plainCPU = (cpu() - c0) / N;
        long plainMallocs = atomic_load(&mallocs) - m0;
        printf("round %d: libnice %.2f us CPU/packet, %.2f mallocs/packet (sending thread %.2f; %ld/%d received); "
               "plain sendto/recvfrom %.2f us CPU/packet, %.2f mallocs/packet; ratio %.2f\n",
               round, niceCPU * 1e6, (double)niceMallocs / N, (double)sendMallocs / N, niceReceived, N, plainCPU * 1e6,
               (double)plainMallocs / N, niceCPU / plainCPU);
    }
    g_main_loop_quit(loop);
    pthread_join(loop_thread, NULL);
    g_object_unref(a);
    g_object_unref(b);
    return 0;
}

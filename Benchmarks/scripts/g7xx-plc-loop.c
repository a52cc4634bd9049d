/* The reference the engine's G.711/G.722 quality is compared with: a plain C loop over spandsp's codec and PLC.
 *
 *   cc -O2 -o /tmp/g7xx-plc-loop Benchmarks/scripts/g7xx-plc-loop.c -lspandsp
 *   /tmp/g7xx-plc-loop pcmu|pcma|g722 IN.wav TRACE.csv OUT.wav
 *
 * IN.wav: mono 16-bit at the codec's rate (8 kHz G.711, 16 kHz G.722). TRACE.csv: `voice-engine simulate
 * --write-trace` (header send_ms,arrival_ms, one row per 20 ms RTP packet, empty arrival = lost), so both runs lose
 * the same packets. Every frame is encoded; a received one is decoded and given to plc_rx, a lost one is made by
 * plc_fillin. OUT.wav has the input's rate and length; the codec's own delay is all the delay it has.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spandsp/telephony.h>
#include <spandsp/bit_operations.h>
#include <spandsp/g711.h>
#include <spandsp/g722.h>
#include <spandsp/plc.h>

static int16_t *read_wav(const char *path, int *rate, long *count) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    uint8_t header[12];
    if (fread(header, 1, 12, f) != 12 || memcmp(header, "RIFF", 4) || memcmp(header + 8, "WAVE", 4)) {
        fprintf(stderr, "%s: not a WAV file\n", path); exit(1);
    }
    int16_t *samples = NULL;
    for (;;) {
        uint8_t chunk[8];
        if (fread(chunk, 1, 8, f) != 8) { fprintf(stderr, "%s: no data chunk\n", path); exit(1); }
        uint32_t size = chunk[4] | chunk[5] << 8 | chunk[6] << 16 | (uint32_t) chunk[7] << 24;
        if (!memcmp(chunk, "fmt ", 4)) {
            uint8_t fmt[64];
            if (size > sizeof fmt || fread(fmt, 1, size, f) != size) exit(1);
            int channels = fmt[2] | fmt[3] << 8, bits = fmt[14] | fmt[15] << 8;
            *rate = fmt[4] | fmt[5] << 8 | fmt[6] << 16 | fmt[7] << 24;
            if (channels != 1 || bits != 16) { fprintf(stderr, "%s: need mono 16-bit\n", path); exit(1); }
        } else if (!memcmp(chunk, "data", 4)) {
            samples = malloc(size);
            *count = (long) fread(samples, 2, size / 2, f);
            break;
        } else {
            fseek(f, size + (size & 1), SEEK_CUR);
        }
    }
    fclose(f);
    return samples;
}

static void write_wav(const char *path, int rate, const int16_t *samples, long count) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    uint32_t data = (uint32_t) count * 2, riff = 36 + data, fmt = 16, byte_rate = (uint32_t) rate * 2;
    uint16_t pcm = 1, channels = 1, align = 2, bits = 16;
    fwrite("RIFF", 1, 4, f); fwrite(&riff, 4, 1, f); fwrite("WAVEfmt ", 1, 8, f); fwrite(&fmt, 4, 1, f);
    fwrite(&pcm, 2, 1, f); fwrite(&channels, 2, 1, f); fwrite(&rate, 4, 1, f); fwrite(&byte_rate, 4, 1, f);
    fwrite(&align, 2, 1, f); fwrite(&bits, 2, 1, f); fwrite("data", 1, 4, f); fwrite(&data, 4, 1, f);
    fwrite(samples, 2, (size_t) count, f);
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: %s pcmu|pcma|g722 IN.wav TRACE.csv OUT.wav\n", argv[0]); return 2; }
    int g722 = !strcmp(argv[1], "g722");
    int rate = 0;
    long count;
    int16_t *in = read_wav(argv[2], &rate, &count);
    if (rate != (g722 ? 16000 : 8000)) { fprintf(stderr, "%s: %s needs %d Hz\n", argv[2], argv[1], g722 ? 16000 : 8000); return 1; }
    FILE *trace = fopen(argv[3], "r");
    if (!trace) { perror(argv[3]); return 1; }
    char line[256];
    if (!fgets(line, sizeof line, trace)) return 1;  /* header */

    g711_state_t *enc711 = g722 ? NULL : g711_init(NULL, !strcmp(argv[1], "pcmu") ? G711_ULAW : G711_ALAW);
    g711_state_t *dec711 = g722 ? NULL : g711_init(NULL, !strcmp(argv[1], "pcmu") ? G711_ULAW : G711_ALAW);
    g722_encode_state_t *enc722 = g722 ? g722_encode_init(NULL, 64000, 0) : NULL;
    g722_decode_state_t *dec722 = g722 ? g722_decode_init(NULL, 64000, 0) : NULL;
    plc_state_t *plc = plc_init(NULL);
    int frame = rate / 50;
    int16_t *out = calloc((size_t) count, 2);
    uint8_t payload[320];
    long frames = 0, lost = 0;
    for (long start = 0; start + frame <= count; start += frame, frames++) {
        int bytes = g722 ? g722_encode(enc722, payload, in + start, frame) : g711_encode(enc711, payload, in + start, frame);
        int received = 1;
        if (fgets(line, sizeof line, trace)) {
            char *comma = strchr(line, ',');
            received = comma && comma[1] != '\n' && comma[1] != '\r' && comma[1] != '\0';
        }
        if (received) {
            int n = g722 ? g722_decode(dec722, out + start, payload, bytes) : g711_decode(dec711, out + start, payload, bytes);
            plc_rx(plc, out + start, n);
        } else {
            plc_fillin(plc, out + start, frame);
            lost++;
        }
    }
    write_wav(argv[4], rate, out, count);
    fprintf(stderr, "%s: %ld frames, %ld lost\n", argv[1], frames, lost);
    return 0;
}

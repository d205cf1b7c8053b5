/* Fuzz target: the shared count node's data (Curator's SharedCount).
 *
 * The input is the node's data.  The semaphore reads it with zoo_get into an
 * 8-byte buffer: the client reports min(data length, 8), or -1 for a node
 * without data, and copies that many bytes.  Checked: zkr__count_parse (the
 * semaphore's check) accepts exactly 4 bytes, reads no byte past the reported
 * length, and gives the big-endian two's complement value; the value
 * round-trips through zkr__be32_put / zkr__be32_get; every 4-byte window of
 * the input does too. */
#include "tests/fuzz/fuzz.h"
#include "util/util.h"

#include <string.h>

#define READ_BUF 8 /* the semaphore's buffer */

static int64_t ref_be32(const uint8_t *b)
{
    int64_t u = (int64_t)b[0] * 16777216 + (int64_t)b[1] * 65536 + (int64_t)b[2] * 256 + b[3];
    return u >= 2147483648LL ? u - 4294967296LL : u;
}

static void check_roundtrip(const uint8_t *w)
{
    unsigned char b[4], back[4];
    int32_t v;

    memcpy(b, w, 4);
    v = zkr__be32_get(b);
    FUZZ_CHECK((int64_t)v == ref_be32(w));
    FUZZ_CHECK((v < 0) == ((w[0] & 0x80) != 0));
    zkr__be32_put(back, v);
    FUZZ_CHECK(memcmp(back, w, 4) == 0);
    FUZZ_CHECK(zkr__be32_get(back) == v);
}

/* as read_count sees a node whose data is data[0..size) */
static void check_read(const uint8_t *data, size_t size, int no_data)
{
    int len = no_data ? -1 : (int)(size < READ_BUF ? size : READ_BUF);
    /* exactly the bytes the client copied: a read past them is an ASan error */
    char *buf = calloc(len > 0 ? (size_t)len : 1, 1);
    int32_t v = 0x5a5a5a5a;
    int rc;

    FUZZ_CHECK(buf != NULL);
    if (len > 0)
        memcpy(buf, data, (size_t)len);
    rc = zkr__count_parse(buf, len, &v);
    if (len == 4) {
        FUZZ_CHECK(rc == 0);
        FUZZ_CHECK((int64_t)v == ref_be32(data));
        {
            unsigned char back[4];
            zkr__be32_put(back, v);
            FUZZ_CHECK(memcmp(back, data, 4) == 0); /* SharedCount writes it back the same */
        }
    } else {
        FUZZ_CHECK(rc == -1);
        FUZZ_CHECK(v == 0x5a5a5a5a); /* untouched */
    }
    FUZZ_CHECK(zkr__count_parse(NULL, len, &v) == -1);
    FUZZ_CHECK(zkr__count_parse(buf, len, NULL) == -1);
    free(buf);
}

int zkr_fuzz_count(const uint8_t *data, size_t size)
{
    size_t i;

    check_read(data, size, 0);
    check_read(data, size, 1);
    /* a count of exactly these bytes' first four, if there are four */
    if (size >= 4)
        check_read(data, 4, 0);
    for (i = 0; i + 4 <= size && i < 64; i++)
        check_roundtrip(data + i);
    /* value -> bytes -> value for a value the input picks */
    if (size >= 4) {
        int32_t v = (int32_t)ref_be32(data);
        unsigned char b[4];
        zkr__be32_put(b, v);
        FUZZ_CHECK(zkr__be32_get(b) == v);
        zkr__be32_put(b, v == INT32_MIN ? INT32_MAX : -v);
        FUZZ_CHECK(zkr__be32_get(b) == (v == INT32_MIN ? INT32_MAX : -v));
    }
    FUZZ_CHECK(zkr__be32_get(NULL) == 0);
    return 0;
}

ZKR_FUZZ_ENTRY(zkr_fuzz_count)

/* Random version 4 UUIDs and Curator "protected" node names. */
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static int fill_getrandom(unsigned char *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t r = getrandom(buf + got, len - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static int fill_urandom(unsigned char *buf, size_t len)
{
    size_t got = 0;
    int fd;

    do {
        fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    return got == len ? 0 : -1;
}

int zkr__uuid(char out[ZKR__UUID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];
    size_t i;
    char *p;

    if (out == NULL)
        return -1;
    if (fill_getrandom(b, sizeof b) != 0 && fill_urandom(b, sizeof b) != 0)
        return -1;

    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */

    p = out;
    for (i = 0; i < sizeof b; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 0x0f];
    }
    *p = '\0';
    return 0;
}

int zkr__protected_name(char *out, size_t len, const char *uuid, const char *marker)
{
    if (uuid == NULL || marker == NULL || (out == NULL && len > 0))
        return -1;
    return snprintf(out, len, ZKR__PROTECTED "%s-%s", uuid, marker);
}

char *zkr__protected_path(const char *dir, const char *uuid, const char *marker)
{
    int n = zkr__protected_name(NULL, 0, uuid, marker);
    char *out, *p;

    if (n < 0)
        return NULL;
    out = zkr__path_child(dir, (size_t)n, &p);
    if (out != NULL)
        zkr__protected_name(p, (size_t)n + 1, uuid, marker);
    return out;
}

int zkr__is_protected_for(const char *child, const char *uuid)
{
    size_t plen = sizeof(ZKR__PROTECTED) - 1;
    size_t ulen;

    if (child == NULL || uuid == NULL)
        return 0;
    if (strncmp(child, ZKR__PROTECTED, plen) != 0)
        return 0;
    child += plen;
    ulen = strlen(uuid);
    if (strncmp(child, uuid, ulen) != 0)
        return 0;
    return child[ulen] == '-';
}

/* Fuzz target: a service instance node's data (curator-x-discovery's JSON,
 * recipes/discovery_json.c), which comes from the server.
 *
 * The input is the node's data.  Checked: zkr__disc_parse never reads past
 * the data (it is copied into an allocation of its exact size), answers
 * ZKR_OK or ZKR_EBADDATA (or ZKR_ENOMEM), and on ZKR_OK gives an instance
 * whose ports are null or 0..65535, whose uriSpec parts are all there, and
 * which copies equal; written again (zkr_instance_to_json: ZKR_OK, or
 * ZKR_EINVAL for a name or id that is not one path segment, an address
 * too long or a string not UTF-8), it reads back equal, and writing that
 * gives the same bytes. */
#include "tests/fuzz/fuzz.h"
#include "recipes/discovery_private.h"

#include <string.h>

static int same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int same(const zkr_instance_t *a, const zkr_instance_t *b)
{
    size_t i;

    if (!same_str(a->name, b->name) || !same_str(a->id, b->id) || !same_str(a->address, b->address) ||
        a->port != b->port || a->ssl_port != b->ssl_port || !same_str(a->payload, b->payload) ||
        a->registration_time_utc != b->registration_time_utc || a->service_type != b->service_type ||
        a->enabled != b->enabled || (a->uri_parts == NULL) != (b->uri_parts == NULL) ||
        a->uri_part_count != b->uri_part_count)
        return 0;
    for (i = 0; i < a->uri_part_count; i++)
        if (!same_str(a->uri_parts[i].value, b->uri_parts[i].value) ||
            a->uri_parts[i].variable != b->uri_parts[i].variable)
            return 0;
    return 1;
}

static void check_instance(const zkr_instance_t *in)
{
    zkr_instance_t *copy = NULL, *back = NULL, *again = NULL;
    char *json = NULL, *json2 = NULL;
    size_t len = 0, len2 = 0, i;
    int rc;

    FUZZ_CHECK(in->name != NULL && in->id != NULL);
    FUZZ_CHECK(in->port >= -1 && in->port <= 65535 && in->ssl_port >= -1 && in->ssl_port <= 65535);
    FUZZ_CHECK((unsigned)in->service_type <= ZKR_SERVICE_DYNAMIC_SEQUENTIAL);
    FUZZ_CHECK(in->enabled == 0 || in->enabled == 1);
    FUZZ_CHECK(in->uri_parts != NULL || in->uri_part_count == 0);
    for (i = 0; i < in->uri_part_count; i++)
        FUZZ_CHECK(in->uri_parts[i].value != NULL);
    rc = zkr_instance_copy(in, &copy);
    FUZZ_CHECK(rc == ZKR_OK || rc == ZKR_ENOMEM);
    if (rc == ZKR_OK)
        FUZZ_CHECK(same(in, copy));
    zkr_instance_free(copy);

    rc = zkr_instance_to_json(in, &json, &len);
    FUZZ_CHECK(rc == ZKR_OK || rc == ZKR_EINVAL || rc == ZKR_ENOMEM);
    if (rc != ZKR_OK) {
        FUZZ_CHECK(json == NULL);
        return;
    }
    FUZZ_CHECK(strlen(json) == len);
    rc = zkr_instance_from_json(json, len, &back);
    FUZZ_CHECK(rc == ZKR_OK || rc == ZKR_ENOMEM);
    if (rc == ZKR_OK) {
        FUZZ_CHECK(same(in, back));
        FUZZ_CHECK(zkr_instance_to_json(back, &json2, &len2) == ZKR_OK);
        FUZZ_CHECK(len2 == len && memcmp(json, json2, len) == 0);
        FUZZ_CHECK(zkr_instance_from_json(json2, len2, &again) == ZKR_OK && same(back, again));
    }
    zkr_instance_free(again);
    zkr_instance_free(back);
    free(json2); /* (zkr_free is free: the target links no session code) */
    free(json);
}

int zkr_fuzz_instance(const uint8_t *data, size_t size)
{
    /* the data in an allocation of its exact size, no NUL after it */
    char *copy = malloc(size > 0 ? size : 1);
    zkr_instance_t *in = NULL;
    int rc;

    if (copy == NULL)
        return 0;
    if (size > 0)
        memcpy(copy, data, size);
    rc = zkr__disc_parse(size > 0 ? copy : NULL, size, &in);
    FUZZ_CHECK(rc == ZKR_OK || rc == ZKR_EBADDATA || rc == ZKR_ENOMEM);
    FUZZ_CHECK((rc == ZKR_OK) == (in != NULL));
    if (in != NULL)
        check_instance(in);
    zkr_instance_free(in);
    free(copy);
    return 0;
}

ZKR_FUZZ_ENTRY(zkr_fuzz_instance)

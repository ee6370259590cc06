#include "errors.h"

#include <string.h>

const drape_errcode_info drape_errcodes[DRAPE_EC_COUNT] = {
#define XX(name, wire, message, http, metric) {#name, wire, message, http, DRAPE_EC_METRIC_##metric},
    DRAPE_ERRCODE_MAP(XX)
#undef XX
};

drape_errcode drape_errcode_parse(const char *wire)
{
    for (int c = 0; wire && c < DRAPE_EC_COUNT; c++)
        if (!strcmp(wire, drape_errcodes[c].wire)) return (drape_errcode)c;
    return DRAPE_EC_COUNT;
}

// Fixture: the plugin's variables (a commented-out one is not read).
#include <stdlib.h>

#include "param.h"

PLUGIN_PARAM(PortBegin, "GPUDIRECTTCPX_PORT_BEGIN", -2);
PLUGIN_PARAM(DynamicChunkSize, "DYNAMIC_CHUNK_SIZE", 0);
// PLUGIN_PARAM(Unused, "GPUDIRECTTCPX_UNUSED", 0);

const char* CtrlDev() { return PLUGIN_GET_ENV("CTRL_DEV"); }
const char* Telemetry() { return getenv("NCCL_GPUDIRECTTCPX_TELEMETRY_EXPORTER_PATH"); }

// Fixture: where the prefix is added, and a variable read by name.
#include <stdlib.h>

#include <string>

int64_t Read(const char* name) {
  std::string env_var = "NCCL_";
  env_var += name;
  const char* ifname = getenv("NCCL_FASTRAK_IFNAME");
  return getenv(env_var.c_str()) != nullptr && ifname != nullptr;
}

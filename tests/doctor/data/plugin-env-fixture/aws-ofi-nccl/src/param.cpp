// Fixture: the defining form, which pastes the prefix before the name.
#define OFI_NCCL_PARAM(type, name, env, default_value) int ofi_nccl_##name("OFI_NCCL_" env);
#define OFI_NCCL_PARAM_REMOVED(type, name, env, default_value, deprecation_msg) \
  int ofi_nccl_##name("OFI_NCCL_" env, deprecation_msg);
#include "param.h"

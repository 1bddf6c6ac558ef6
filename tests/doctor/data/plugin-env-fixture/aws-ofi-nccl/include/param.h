// Fixture for scripts/gen-plugin-env.py --source aws-ofi-nccl (not Amazon's code; never
// compiled): a declaring form of the parameter macro, a forwarding one, and its uses.
#ifndef OFI_NCCL_PARAM
#define OFI_NCCL_PARAM(type, name, env, default_value) extern int ofi_nccl_##name;
#endif
#define OFI_NCCL_PARAM_INT(name, env, default_value) OFI_NCCL_PARAM(int, name, env, default_value)

OFI_NCCL_PARAM(bool, gdr_flush_disable, "GDR_FLUSH_DISABLE", false);
OFI_NCCL_PARAM_INT(nic_dup_conns, "NIC_DUP_CONNS", 0);
OFI_NCCL_PARAM(size_t, cq_size, "CQ_SIZE", 3 * 4096);
OFI_NCCL_PARAM_REMOVED(size_t, min_bounce, "MIN_POSTED_BOUNCE_BUFFERS", 64, "Use X instead.");

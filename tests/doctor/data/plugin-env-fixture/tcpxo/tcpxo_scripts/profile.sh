# Fixture: a vendor profile users source; it exports a name the plugin's source never reads.
export NCCL_FASTRAK_NUM_FLOWS=2
export NCCL_FASTRAK_USE_SNAP="1"
export UNRELATED=1

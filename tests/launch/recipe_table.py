"""The settings each recipe under deploy/ must have, written from the seeds
(shared/reference/seeds/) and the upstream files they link, each with the file and line it
comes from. tests/launch/recipes_test.py holds every recipe to its row: a recipe that lacks a
setting, or gives it another value, fails.

Kinds of settings:
  ("var", NAME, VALUE, SOURCE)    an NCCL or other variable the recipe sets (env, envs, export)
  ("yaml", PATH, VALUE, SOURCE)   a key of the recipe's first YAML document ("a.b.0.c")
  ("has", TEXT, SOURCE)           text in the recipe, outside comments
  ("lacks", TEXT, SOURCE)         text that must not be in the recipe, outside comments
Each row also names the node's interfaces as its seed gives them ("interfaces") and its RDMA
devices ("rdma"), the node tree doctor's NCCL lint runs on, and whether the file is a recipe that runs fabricscope ("runs").
"""

SEED_SKY = "seeds/000_6daea02de48545cc.txt"
SEED_K8S = "seeds/002_82a42aa159fa275d.txt"
SKY_VM = "skypilot@d7fe39d examples/gcp_gpu_direct_tcpx/nccl_tcpx_gcpvm_h100.yaml"
SKY_GKE = "skypilot@4629c49 examples/gcp_gpu_direct_tcpx/nccl_tcpx_gke_h100.yaml"
SKY_RDMA = "skypilot@6dbbde2 examples/gcp_gpu_direct_tcpx/nccl_rdma_gke_h200.yaml"
GCP_A4 = "container-engine-accelerators@992db81 gpudirect-rdma/nccl-test-a4.yaml"
GCP_TCPXO = "container-engine-accelerators@992db81 gpudirect-tcpxo/nccl-test-latest.yaml"
GCP_TCPXO_README = "container-engine-accelerators@992db81 gpudirect-tcpxo/README.md"
DSTACK = "dstack@511c318 mkdocs/docs/examples/clusters/gcp.md"
DSTACK_A4 = "dstack@5b28643 examples/clusters/a4/README.md"
DSTACK_NCCL = "dstack@5b28643 examples/clusters/nccl-tests/.dstack.yml"
MPI_OPERATOR = "mpi-operator@651ee67 build/base/Dockerfile"
MPI_CONTROLLER = "mpi-operator@caa3c47 pkg/controller/mpi_job_controller.go"
MPI_TYPES = "mpi-operator@caa3c47 pkg/apis/kubeflow/v2beta1/types.go"
DSTACK_JOBS = "dstack@511c318 src/dstack/_internal/server/services/jobs/configurators/base.py"
DSTACK_CLI_RUN = "dstack@511c318 src/dstack/_internal/cli/services/configurators/run.py"
DSTACK_RUNNER = "dstack@511c318 runner/internal/runner/executor"
# Read through the code index, which stores several versions of this file without naming the
# newest one's commit (0048bbf and 6daea0f among them); get_gke_accelerator_name maps
# H100-MEGA-80GB in each version seen.
SKY_K8S_UTILS = "skypilot (code index, newest stored) sky/provision/kubernetes/utils.py"

BUILD_ALONE = ("has", "scripts/install-deps.sh build",
               "issue 25 item 3: the binary alone, install-deps.sh's build set")

# How dstack runs a task's commands and where its source comes from (issue 38).
DSTACK_AS_RUN = [
    ("yaml", "shell", "bash", f"{DSTACK_JOBS}:247-256 (_shell), 263-266 (_commands)"),
    ("lacks", "entrypoint:", f"{DSTACK_JOBS}:259-262: an entrypoint gets the commands as its "
     "arguments, so `bash -c CMD1 CMD2` runs CMD1 alone"),
    ("yaml", "repos.0.local_path", "../..", f"{DSTACK_CLI_RUN}:491-498 (relative to the file)"),
    ("yaml", "repos.0.path", "/fabricscope", f"{DSTACK_RUNNER}/repo.go:53"),
    ("yaml", "working_dir", "/fabricscope", f"{DSTACK_RUNNER}/executor.go:517"),
]

# GPUDirect-TCPX on the VM: the upstream SkyPilot file's variables, line by line.
TCPX_SKYPILOT = [
    ("yaml", "resources.infra", "gcp", f"{SKY_VM}:4"),
    ("yaml", "resources.image_id",
     "docker:us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx",
     f"{SKY_VM}:6; {SEED_SKY}:194"),
    ("yaml", "config.gcp.enable_gpu_direct", True, f"{SEED_SKY}:174; {SKY_VM}:123"),
    ("has", "while [ ! -f /usr/local/tcpx/lib64/libnccl.so.2 ]", f"{SKY_VM}:16"),
    ("has", "export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/tcpx/lib64", f"{SKY_VM}:68"),
    ("var", "NCCL_SOCKET_IFNAME", "eth0", f"{SKY_VM}:43"),
    ("var", "NCCL_CROSS_NIC", "0", f"{SKY_VM}:44"),
    ("var", "NCCL_ALGO", "Ring", f"{SKY_VM}:45"),
    ("var", "NCCL_PROTO", "Simple", f"{SKY_VM}:46"),
    ("var", "NCCL_NSOCKS_PERTHREAD", "4", f"{SKY_VM}:47"),
    ("var", "NCCL_SOCKET_NTHREADS", "1", f"{SKY_VM}:48"),
    ("var", "NCCL_NET_GDR_LEVEL", "PIX", f"{SKY_VM}:49"),
    ("var", "NCCL_DYNAMIC_CHUNK_SIZE", "524288", f"{SKY_VM}:50"),
    ("var", "NCCL_P2P_PXN_LEVEL", "0", f"{SKY_VM}:51"),
    ("var", "NCCL_P2P_NET_CHUNKSIZE", "524288", f"{SKY_VM}:52"),
    ("var", "NCCL_P2P_PCI_CHUNKSIZE", "524288", f"{SKY_VM}:53"),
    ("var", "NCCL_P2P_NVL_CHUNKSIZE", "1048576", f"{SKY_VM}:54"),
    ("var", "NCCL_BUFFSIZE", "8388608", f"{SKY_VM}:55"),
    ("var", "NCCL_MAX_NCHANNELS", "8", f"{SKY_VM}:56"),
    ("var", "NCCL_MIN_NCHANNELS", "8", f"{SKY_VM}:57"),
    ("var", "CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7", f"{SKY_VM}:58"),
    ("var", "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "eth1,eth2,eth3,eth4", f"{SKY_VM}:59"),
    ("var", "NCCL_GPUDIRECTTCPX_CTRL_DEV", "eth0", f"{SKY_VM}:60"),
    ("var", "NCCL_GPUDIRECTTCPX_TX_BINDINGS",
     "eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177;eth4:60-73,164-177", f"{SKY_VM}:61"),
    ("var", "NCCL_GPUDIRECTTCPX_RX_BINDINGS",
     "eth1:22-35,126-139;eth2:22-35,126-139;eth3:74-87,178-191;eth4:74-87,178-191", f"{SKY_VM}:62"),
    ("var", "NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS", "50000", f"{SKY_VM}:63"),
    ("var", "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX", "/run/tcpx", f"{SKY_VM}:64"),
    ("var", "NCCL_GPUDIRECTTCPX_FORCE_ACK", "0", f"{SKY_VM}:65"),
    BUILD_ALONE,
]
TCPX_INTERFACES = (["eth0", "eth1", "eth2", "eth3", "eth4"], f"{SKY_VM}:43,59,60")

# GPUDirect-TCPX on dstack: the guide's A3 High/Edge variables.
TCPX_DSTACK = [
    ("yaml", "image", "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx",
     f"{DSTACK}:450"),
    ("yaml", "spot_policy", "auto", f"{DSTACK}:481"),
    ("yaml", "resources.shm_size", "16GB", f"{DSTACK}:483"),
    ("has", "export LD_LIBRARY_PATH=/usr/local/tcpx/lib64:$LD_LIBRARY_PATH", f"{DSTACK}:454"),
    ("var", "NCCL_SOCKET_IFNAME", "eth0", f"{DSTACK}:553"),
    ("var", "NCCL_CROSS_NIC", "0", f"{DSTACK}:554"),
    ("var", "NCCL_ALGO", "Ring", f"{DSTACK}:555"),
    ("var", "NCCL_PROTO", "Simple", f"{DSTACK}:556"),
    ("var", "NCCL_NSOCKS_PERTHREAD", "4", f"{DSTACK}:557"),
    ("var", "NCCL_SOCKET_NTHREADS", "1", f"{DSTACK}:558"),
    ("var", "NCCL_NET_GDR_LEVEL", "PIX", f"{DSTACK}:559"),
    ("var", "NCCL_P2P_PXN_LEVEL", "0", f"{DSTACK}:560"),
    ("var", "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "eth1,eth2,eth3,eth4", f"{DSTACK}:561"),
    ("var", "NCCL_GPUDIRECTTCPX_CTRL_DEV", "eth0", f"{DSTACK}:562"),
    ("var", "NCCL_DYNAMIC_CHUNK_SIZE", "524288", f"{DSTACK}:563"),
    ("var", "NCCL_P2P_NET_CHUNKSIZE", "524288", f"{DSTACK}:564"),
    ("var", "NCCL_P2P_PCI_CHUNKSIZE", "524288", f"{DSTACK}:565"),
    ("var", "NCCL_P2P_NVL_CHUNKSIZE", "1048576", f"{DSTACK}:566"),
    ("var", "NCCL_BUFFSIZE", "4194304", f"{DSTACK}:567"),
    ("var", "NCCL_GPUDIRECTTCPX_TX_BINDINGS",
     "eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177;eth4:60-73,164-177", f"{DSTACK}:568"),
    ("var", "NCCL_GPUDIRECTTCPX_RX_BINDINGS",
     "eth1:22-35,126-139;eth2:22-35,126-139;eth3:74-87,178-191;eth4:74-87,178-191", f"{DSTACK}:569"),
    ("var", "NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS", "50000", f"{DSTACK}:570"),
    ("var", "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX", "/run/tcpx", f"{DSTACK}:571"),
    ("var", "NCCL_GPUDIRECTTCPX_FORCE_ACK", "0", f"{DSTACK}:473"),
    ("lacks", "sudo", "issue 25: dstack's default image has no sudo"),
    BUILD_ALONE,
] + DSTACK_AS_RUN
TCPX_DSTACK_INTERFACES = (["eth0", "eth1", "eth2", "eth3", "eth4"], f"{DSTACK}:473,553,561,562")

GIB_SKYPILOT = [
    ("yaml", "resources.infra", "k8s", f"{SKY_RDMA}:6"),
    ("yaml", "resources.network_tier", "best", f"{SKY_RDMA}:9; {SEED_SKY}:26"),
    ("has", "/scripts/container_entry.sh shell", f"{SKY_RDMA}:17"),
    ("has", "source /usr/local/gib/scripts/set_nccl_env.sh", f"{SKY_RDMA}:18,41"),
    ("var", "NCCL_NET", "gIB", f"{SKY_RDMA}:38"),
    ("var", "NCCL_TESTS_SPLIT_MASK", "0x0", f"{SKY_RDMA}:35"),
    BUILD_ALONE,
]
GIB_INTERFACES = (["eth0", "eth2", "eth3", "eth4", "eth5", "eth6", "eth7", "eth8", "eth9"],
                  f"{GCP_A4}:29-37")

TABLE = {
    "skypilot/a3-highgpu-8g.yaml": {
        "runs": True, "interfaces": TCPX_INTERFACES,
        "settings": TCPX_SKYPILOT + [
            ("yaml", "resources.instance_type", "a3-highgpu-8g", f"{SKY_VM}:5; {SEED_SKY}:5")],
    },
    "skypilot/a3-edgegpu-8g.yaml": {
        "runs": True, "interfaces": TCPX_INTERFACES,
        "settings": TCPX_SKYPILOT + [
            ("yaml", "resources.instance_type", "a3-edgegpu-8g", f"{SEED_SKY}:5,14")],
    },
    "skypilot/a3-highgpu-8g-gke.yaml": {
        "runs": True, "interfaces": (["eth0", "eth1", "eth2", "eth3", "eth4"], f"{SKY_GKE}:74"),
        "settings": [
            ("yaml", "resources.infra", "k8s", f"{SKY_GKE}:9; {SEED_SKY}:15"),
            ("yaml", "resources.accelerators", "H100:8", f"{SKY_GKE}:10"),
            ("yaml", "resources.image_id",
             "docker:us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx",
             f"{SKY_GKE}:11"),
            ("yaml", "resources.network_tier", "best", f"{SKY_GKE}:12; {SEED_SKY}:26"),
            ("has", "export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/tcpx/lib64",
             f"{SKY_GKE}:35"),
            BUILD_ALONE,
        ],
    },
    "skypilot/a3-megagpu-8g.yaml": {
        "runs": True,
        "interfaces": (["eth0", "eth1", "eth2", "eth3", "eth4", "eth5", "eth6", "eth7", "eth8"],
                       f"{GCP_TCPXO}:56-64"),
        "settings": [
            ("yaml", "resources.infra", "k8s", f"{SEED_SKY}:21-29"),
            ("yaml", "resources.network_tier", "best", f"{SEED_SKY}:26"),
            ("yaml", "resources.image_id",
             "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15",
             f"{GCP_TCPXO}:108; {GCP_TCPXO_README}:56-64 (paired with tcpgpudmarxd-dev:v1.0.21)"),
            ("yaml", "resources.accelerators", "H100-MEGA-80GB:8",
             f"{SKY_K8S_UTILS} GKELabelFormatter.get_accelerator_from_label_value, "
             "get_gke_accelerator_name"),
            ("var", "NCCL_LIB_DIR", "/usr/local/nvidia/lib64", f"{GCP_TCPXO_README}:30"),
            ("has", "source ${NCCL_LIB_DIR}/nccl-env-profile.sh", f"{GCP_TCPXO_README}:34"),
            ("has", 'export LD_LIBRARY_PATH="$NCCL_LIB_DIR"', f"{GCP_TCPXO}:130-131"),
            ("var", "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "/dev/aperture_devices",
             f"{GCP_TCPXO}:132-133"),
            ("var", "NCCL_FASTRAK_CTRL_DEV", "eth0", f"{GCP_TCPXO_README}:73"),
            ("var", "NCCL_FASTRAK_IFNAME", "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8",
             f"{GCP_TCPXO_README}:74"),
            ("var", "NCCL_SOCKET_IFNAME", "eth0", f"{GCP_TCPXO_README}:75"),
            BUILD_ALONE,
        ],
    },
    "skypilot/a3-ultragpu-8g.yaml": {
        "runs": True, "interfaces": GIB_INTERFACES,
        "settings": GIB_SKYPILOT + [
            ("yaml", "resources.accelerators", "H200:8", f"{SKY_RDMA}:7; {SEED_SKY}:6"),
            ("yaml", "resources.image_id",
             "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:v1.0.6",
             f"{SKY_RDMA}:8")],
    },
    "skypilot/a4-highgpu-8g.yaml": {
        "runs": True, "interfaces": GIB_INTERFACES,
        "settings": GIB_SKYPILOT + [
            ("yaml", "resources.accelerators", "B200:8", f"{SEED_SKY}:6"),
            ("yaml", "resources.image_id",
             "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:v1.1.1",
             f"{GCP_A4}:54; {SEED_SKY}:105")],
    },
    "dstack/a3-highgpu-8g.dstack.yml": {
        "runs": True, "interfaces": TCPX_DSTACK_INTERFACES, "settings": TCPX_DSTACK,
    },
    "dstack/a3-edgegpu-8g.dstack.yml": {
        "runs": True, "interfaces": TCPX_DSTACK_INTERFACES, "settings": TCPX_DSTACK,
    },
    "dstack/a3-megagpu-8g.dstack.yml": {
        "runs": True,
        "interfaces": (["enp0s12", "enp6s0", "enp7s0", "enp13s0", "enp14s0", "enp134s0",
                        "enp135s0", "enp141s0", "enp142s0"], f"{DSTACK}:368-370"),
        "settings": [
            ("yaml", "image", "nvcr.io/nvidia/pytorch:24.04-py3", f"{DSTACK}:361"),
            ("yaml", "spot_policy", "auto", f"{DSTACK}:405"),
            ("yaml", "resources.shm_size", "16GB", f"{DSTACK}:407"),
            ("has", 'NCCL_LIB_DIR="/var/lib/tcpxo/lib64"', f"{DSTACK}:366"),
            ("has", "source ${NCCL_LIB_DIR}/nccl-env-profile-ll128.sh", f"{DSTACK}:367"),
            ("var", "NCCL_FASTRAK_CTRL_DEV", "enp0s12", f"{DSTACK}:368"),
            ("var", "NCCL_FASTRAK_IFNAME",
             "enp6s0,enp7s0,enp13s0,enp14s0,enp134s0,enp135s0,enp141s0,enp142s0", f"{DSTACK}:369"),
            ("var", "NCCL_SOCKET_IFNAME", "enp0s12", f"{DSTACK}:370"),
            ("var", "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "/dev/aperture_devices", f"{DSTACK}:371"),
            ("has", 'export LD_LIBRARY_PATH="${NCCL_LIB_DIR}:${LD_LIBRARY_PATH}"', f"{DSTACK}:372"),
            ("lacks", "sudo", "issue 25: dstack's default image has no sudo"),
            BUILD_ALONE,
        ] + DSTACK_AS_RUN,
    },
    "dstack/a4-highgpu-8g.dstack.yml": {
        "runs": True, "interfaces": (["eth0", "eth1"], f"{DSTACK_A4}:79-81 (main and extra VPC)"),
        "settings": [
            ("yaml", "spot_policy", "spot", f"{DSTACK_A4}:84"),
            ("yaml", "resources.gpu", "B200:8", f"{DSTACK_A4}:55"),
            ("yaml", "resources.shm_size", "16GB", f"{DSTACK_NCCL}:29"),
            ("yaml", "startup_order", "workers-first", f"{DSTACK_NCCL}:5"),
            ("yaml", "stop_criteria", "master-done", f"{DSTACK_NCCL}:6"),
            ("var", "NCCL_DEBUG", "INFO", f"{DSTACK_NCCL}:9"),
            ("lacks", "sudo", "issue 25: dstack's default image has no sudo"),
            BUILD_ALONE,
        ] + DSTACK_AS_RUN,
    },
    "dstack/fleets/a4-highgpu-8g.fleet.dstack.yml": {
        "runs": False,
        "settings": [
            ("yaml", "type", "fleet", f"{DSTACK_A4}:43"),
            ("yaml", "placement", "cluster", f"{DSTACK_A4}:47"),
            ("yaml", "nodes", 2, f"{DSTACK_A4}:46"),
            ("yaml", "spot_policy", "spot", f"{DSTACK_A4}:84"),
            ("yaml", "resources.gpu", "B200:8", f"{DSTACK_A4}:55"),
            ("yaml", "backends.0", "gcp", f"{DSTACK_A4}:51"),
        ],
    },
    "dstack/fleets/a3-megagpu-8g.fleet.dstack.yml": {
        "runs": False,
        "settings": [
            ("yaml", "placement", "cluster", f"{DSTACK}:243"),
            ("yaml", "instance_types.0", "a3-megagpu-8g", f"{DSTACK}:247-248"),
        ],
    },
    "dstack/fleets/a3-highgpu-8g.fleet.dstack.yml": {
        "runs": False,
        "settings": [
            ("yaml", "placement", "cluster", f"{DSTACK}:282"),
            ("yaml", "instance_types.0", "a3-highgpu-8g", f"{DSTACK}:285-286"),
        ],
    },
    "dstack/fleets/a3-edgegpu-8g.fleet.dstack.yml": {
        "runs": False,
        "settings": [
            ("yaml", "placement", "cluster", f"{DSTACK}:282"),
            ("yaml", "instance_types.0", "a3-edgegpu-8g", f"{DSTACK}:113-114 (A3 High/Edge)"),
        ],
    },
    "dstack/fleets/gcp-a4.server.yml": {
        "runs": False,
        "settings": [
            ("yaml", "projects.0.backends.0.type", "gcp", f"{DSTACK}:32"),
            ("yaml", "projects.0.backends.0.extra_vpcs", ["dstack-gvnic-net-1"], f"{DSTACK}:36"),
            ("yaml", "projects.0.backends.0.roce_vpcs", ["dstack-mrdma"], f"{DSTACK}:37"),
        ],
    },
    "dstack/fleets/gcp-a3-mega.server.yml": {
        "runs": False,
        "settings": [
            ("yaml", "projects.0.backends.0.extra_vpcs",
             [f"dstack-gpu-data-net-{n}" for n in range(1, 9)], f"{DSTACK}:68-76"),
        ],
    },
    "dstack/fleets/gcp-a3-high-edge.server.yml": {
        "runs": False,
        "settings": [
            ("yaml", "projects.0.backends.0.extra_vpcs",
             [f"dstack-gpu-data-net-{n}" for n in range(1, 5)], f"{DSTACK}:126-130"),
            ("has", "vm_service_account:", f"{DSTACK}:136"),
        ],
    },
    "kubernetes/gke-gib.yaml": {
        "runs": True, "interfaces": GIB_INTERFACES,
        "settings": [
            ("has", "networking.gke.io/default-interface: 'eth0'", f"{GCP_A4}:26"),
            ("has", '{"interfaceName":"eth9","network":"rdma-7"}', f"{GCP_A4}:37"),
            ("has", "path: /home/kubernetes/bin/gib", f"{GCP_A4}:48"),
            ("has", "mountPath: /usr/local/gib", f"{GCP_A4}:63"),
            ("has", "mountPath: /usr/local/nvidia", f"{GCP_A4}:61"),
            ("var", "LD_LIBRARY_PATH", "/usr/local/nvidia/lib64", f"{GCP_A4}:67-68"),
            ("has", "nvidia.com/gpu: 8", f"{GCP_A4}:71"),
            ("has", "/scripts/container_entry.sh shell", f"{GCP_A4}:75"),
            ("has", "source /usr/local/gib/scripts/set_nccl_env.sh", f"{GCP_A4}:76"),
            ("lacks", "rdma/rdma_shared_device_a", "issue 25 item 6: GKE offers no such resource"),
            ("has", "REGISTRY/fabricscope-gib:TAG", "issue 25 item 6: an image a user pushes"),
        ],
    },
    "kubernetes/jobset.yaml": {
        "runs": True, "interfaces": (["eth0"], f"{SEED_K8S}:120-121"),
        "rdma": (["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"], f"{SEED_K8S}:98-99"),
        "settings": [
            ("var", "NCCL_NET", "IB", f"{SEED_K8S}:94-95"),
            ("var", "NCCL_IB_HCA", "=mlx5_0,mlx5_1,mlx5_2,mlx5_3", f"{SEED_K8S}:98-99"),
            ("var", "NCCL_IB_GID_INDEX", "3", f"{SEED_K8S}:100-101"),
            ("var", "NCCL_IB_TIMEOUT", "23", f"{SEED_K8S}:102-103"),
            ("var", "NCCL_IB_RETRY_CNT", "7", f"{SEED_K8S}:104-105"),
            ("var", "NCCL_NET_GDR_LEVEL", "5", f"{SEED_K8S}:108-109"),
            ("var", "NCCL_NET_GDR_READ", "1", f"{SEED_K8S}:110-111"),
            ("var", "NCCL_CROSS_NIC", "0", f"{SEED_K8S}:114-115"),
            ("var", "NCCL_IB_QPS_PER_CONNECTION", "4", f"{SEED_K8S}:116-117"),
            ("var", "NCCL_SOCKET_IFNAME", "=eth0", f"{SEED_K8S}:120-121"),
            ("var", "NCCL_SOCKET_NTHREADS", "4", f"{SEED_K8S}:122-123"),
            ("var", "NCCL_NSOCKS_PERTHREAD", "4", f"{SEED_K8S}:124-125"),
            ("var", "NCCL_BUFFSIZE", "8388608", f"{SEED_K8S}:126-127"),
            ("has", "hostNetwork: true", f"{SEED_K8S}:79"),
            ("has", "rdma/rdma_shared_device_a: 1", f"{SEED_K8S}:145"),
            ("has", "image: REGISTRY/fabricscope:TAG", "issue 25 item 6: an image a user pushes"),
        ],
    },
    "kubernetes/mpijob.yaml": {
        "runs": True, "interfaces": (["eth0"], f"{SEED_K8S}:120-121"),
        "rdma": (["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"], f"{SEED_K8S}:98-99"),
        "settings": [
            ("has", '"/usr/sbin/sshd", "-De", "-p", "2222"', f"{MPI_OPERATOR}:3,25"),
            ("has", 'plm_rsh_args "-p 2222', f"{MPI_OPERATOR}:3,23"),
            ("yaml", "spec.mpiReplicaSpecs.Launcher.restartPolicy", "Never",
             f"{MPI_CONTROLLER}:1640-1645,1722-1728 (the replica spec's, default OnFailure)"),
            ("yaml", "spec.runPolicy.backoffLimit", 0,
             f"{MPI_CONTROLLER}:1569 (the launcher Job's backoffLimit; unset: Kubernetes' 6)"),
            ("has", "-o ConnectionAttempts=10",
             f"{MPI_CONTROLLER}:192-193 (OMPI_MCA_plm_rsh_args, which --mca replaces)"),
            ("yaml", "spec.launcherCreationPolicy", "WaitForWorkersReady",
             f"{MPI_TYPES}:162-165,194-195"),
            ("var", "NCCL_NET", "IB", f"{SEED_K8S}:94-95"),
            ("var", "NCCL_IB_HCA", "=mlx5_0,mlx5_1,mlx5_2,mlx5_3", f"{SEED_K8S}:98-99"),
            ("var", "NCCL_IB_GID_INDEX", "3", f"{SEED_K8S}:100-101"),
            ("var", "NCCL_CROSS_NIC", "0", f"{SEED_K8S}:114-115"),
            ("var", "NCCL_SOCKET_IFNAME", "=eth0", f"{SEED_K8S}:120-121"),
            ("has", "rdma/rdma_shared_device_a: 1", f"{SEED_K8S}:145"),
            ("has", "image: REGISTRY/fabricscope:TAG", "issue 25 item 6: an image a user pushes"),
        ],
    },
    "slurm/fabricscope.sbatch": {
        "runs": True, "interfaces": (["eth0"], "none named: the node's own"),
        "settings": [
            ("has", "#SBATCH --gpus-per-node=8",
             "issue 25 item 5: a job that requests no GPUs sees none"),
        ],
    },
}

// A few lines in the shape of NVIDIA/nccl-tests src/common.cu (v2.19.6): globals with
// their initializers, the getopt_long table, the switch and the usage text.
int nThreads = 1;
size_t minBytes = 32*1024*1024;
static int ncclop = ncclSum;
static int ctaPolicy = -1;

testResult_t run();
int main(int argc, char* argv[]) {
  double parsed;
  char *output_file = nullptr;
  static struct option longopts[] = {
    {"nthreads", required_argument, 0, 't'},
    {"minbytes", required_argument, 0, 'b'},
    {"op", required_argument, 0, 'o'},
    {"output_file", required_argument, 0, 'J'},
    {"cta_policy", required_argument, 0, 'x'},
    {"help", no_argument, 0, 'h'},
    {}
  };
  while(1) {
    c = getopt_long(argc, argv, "t:b:o:J:x:h", longopts, &longindex);
    switch(c) {
      case 't':
        nThreads = strtol(optarg, NULL, 0);
        break;
      case 'b':
        parsed = parsesize(optarg);
        if (parsed < 0) {
          return -1;
        }
        minBytes = (size_t)parsed;
        break;
      case 'o':
        ncclop = ncclstringtoop(optarg);
        break;
      case 'J':
        output_file = strdup(optarg);
        break;
      case 'x':
#if NCCL_VERSION_CODE >= NCCL_VERSION(2,27,0)
        ctaPolicy = (int)strtol(optarg, NULL, 0);
#endif
        break;
      case 'h':
      default:
        printf("USAGE: %s \n\t"
            "[-t,--nthreads <num threads>] \n\t"
            "[-b,--minbytes <min size in bytes>] \n\t"
            "[-o,--op <sum/prod/min/max/avg/mulsum/all>] \n\t"
            "[-J,--output_file <file> write output to filepath] \n\t"
            "[-x,--cta_policy <0/1/2> set CTA policy (default: do not set)] \n\t"
            "[-h,--help]\n",
          programName);
        return 0;
    }
  }
}

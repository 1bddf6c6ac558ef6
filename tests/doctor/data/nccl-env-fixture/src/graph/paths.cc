// Fixture for scripts/gen-nccl-env.py: a level table and ncclGetLevel in the style of
// NCCL's src/graph/topo.cc, topo.h and paths.cc (never compiled).
#include <stdlib.h>
#include <string.h>

#include "param.h"

#define PATH_LOC 0
#define PATH_NVL 1
#define PATH_PIX 2
#define PATH_PHB 3
#define PATH_SYS 4
#define PATH_DIS 5

const char* topoPathTypeStr[] = {"LOC", "NVL", "PIX", "PHB", "SYS", "DIS"};

static const int levelsOldToNew[] = {PATH_LOC, PATH_PIX, PATH_PHB, PATH_SYS};
int ncclGetLevel(int* level, const char* disableEnv, const char* levelEnv) {
  if (*level == -1) {
    int l = -1;
    if (disableEnv) {
      const char* str = ncclGetEnv(disableEnv);
      if (str) {
        int disable = strtol(str, NULL, 0);
        if (disable == 1) l = PATH_LOC;
      }
    }
    if (l == -1) {
      const char* str = ncclGetEnv(levelEnv);
      if (str) {
        for (int i = 0; i <= PATH_SYS; i++) {
          if (strcmp(str, topoPathTypeStr[i]) == 0) {
            l = i;
            break;
          }
        }
        if (l == -1 && str[0] >= '0' && str[0] <= '9') {
          int oldLevel = strtol(str, NULL, 0);
          const int maxOldLevel = sizeof(levelsOldToNew) / sizeof(int) - 1;
          if (oldLevel > maxOldLevel) oldLevel = maxOldLevel;
          l = levelsOldToNew[oldLevel];
        }
      }
    }
    *level = l >= 0 ? l : -2;
  }
  return 0;
}

static int userP2pLevel = -1;
int ncclGetUserP2pLevel(int* level) {
  ncclGetLevel(&userP2pLevel, "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL");
  return *level = userP2pLevel;
}

static int userGdrLevel = -1;
int ncclGetUserGdrLevel() {
  ncclGetLevel(&userGdrLevel, NULL, "NCCL_NET_GDR_LEVEL");
  return userGdrLevel;
}

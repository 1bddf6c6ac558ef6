#!/usr/bin/env python3
"""Writes the engines' schemas the recipe test validates against, from the engines' own trees.

  make_schemas.py DSTACK_GIT_DIR MPI_OPERATOR_GIT_DIR JOBSET_GIT_DIR OUT_DIR

Each schema is read at the commit named below with `git --git-dir=... show COMMIT:PATH`, so
the files in this directory can be made again and compared (tests/launch/schemas/SOURCES.md):
- dstack: its configuration models are pydantic 2 (not in Debian 12), so the fields are read
  from the source with Python's ast: every annotated field of TaskConfiguration's bases and of
  ResourcesSpec and RepoSpec, each model `extra="forbid"` (core/models/common.py CoreModel),
  so an unknown key is refused as dstack refuses it. A field's alias (`Field(alias=...)`) is
  not modelled (none of the recipe's keys has one).
- MPIJob and JobSet: the CRDs' openAPIV3Schema as the operators ship them.
Only the standard library and python3-yaml are needed.
"""
import ast
import json
import pathlib
import subprocess
import sys

import yaml

DSTACK_COMMIT = "511c318c8a7672fb2a925041bfc2d7301a26272e"
MPI_COMMIT = "caa3c47fc42eb762635f78045ec0fcd1a89eb038"
# The newest stored snapshot of kubernetes-sigs/jobset.
JOBSET_COMMIT = "08dfbdfd682714a9ab929633eca8dc95315187e7"
MODELS = "src/dstack/_internal/core/models/"


def show(git_dir, commit, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def classes(source):
    """class name -> (base names, [field names]) of a module, fields in order."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            fields = [s.target.id for s in node.body
                      if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                      and not s.target.id.startswith("_")]
            out[node.name] = (bases, fields)
    return out


def fields_of(name, table):
    bases, fields = table[name]
    out = []
    for base in bases:
        if base in table:
            out += fields_of(base, table)
    return out + fields


def dstack_task(git_dir):
    conf = classes(show(git_dir, DSTACK_COMMIT, MODELS + "configurations.py"))
    profiles = classes(show(git_dir, DSTACK_COMMIT, MODELS + "profiles.py"))
    resources = classes(show(git_dir, DSTACK_COMMIT, MODELS + "resources.py"))
    table = {**profiles, **conf}
    task = sorted(set(fields_of("TaskConfiguration", table)))
    closed = {"type": "object", "additionalProperties": False}
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$comment": f"dstack@{DSTACK_COMMIT[:7]} {MODELS}configurations.py TaskConfiguration "
                    "(ProfileParams, BaseRunConfiguration, ConfigurationWithCommandsParams, "
                    "ConfigurationWithPortsParams, TaskConfigurationParams); "
                    "resources.py ResourcesSpec; RepoSpec; extra='forbid' (common.py CoreModel)",
        **closed,
        "required": ["type"],
        "properties": {
            **{f: {} for f in task},
            "type": {"const": "task"},
            "shell": {"type": "string"},
            "commands": {"type": "array", "items": {"type": "string"}},
            "env": {"type": ["array", "object"]},
            "resources": {**closed, "properties": {
                f: {} for f in fields_of("ResourcesSpec", resources)}},
            "repos": {"type": "array", "maxItems": 1, "items": {"anyOf": [
                {"type": "string"},
                {**closed, "properties": {f: {} for f in fields_of("RepoSpec", conf)}}]}},
        },
    }


def dstack_fleet(git_dir):
    fleets = classes(show(git_dir, DSTACK_COMMIT, MODELS + "fleets.py"))
    resources = classes(show(git_dir, DSTACK_COMMIT, MODELS + "resources.py"))
    closed = {"type": "object", "additionalProperties": False}
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$comment": f"dstack@{DSTACK_COMMIT[:7]} {MODELS}fleets.py FleetConfiguration "
                    "(SSHFleetConfigurationProps, BackendFleetConfiguraionProps, "
                    "CommonFleetConfigurationProps); resources.py ResourcesSpec",
        **closed, "required": ["type"],
        "properties": {**{f: {} for f in fields_of("FleetConfiguration", fleets)},
                       "type": {"const": "fleet"},
                       "resources": {**closed, "properties": {
                           f: {} for f in fields_of("ResourcesSpec", resources)}}},
    }


def dstack_server(git_dir):
    """~/.dstack/server/config.yml with gcp backends only (the recipes' one backend)."""
    server = classes(show(git_dir, DSTACK_COMMIT, "src/dstack/_internal/server/services/config.py"))
    gcp = classes(show(git_dir, DSTACK_COMMIT, "src/dstack/_internal/core/backends/gcp/models.py"))
    closed = {"type": "object", "additionalProperties": False}
    creds = {"anyOf": [{**closed, "properties": {f: {} for f in fields_of(c, gcp)}}
                       for c in ("GCPDefaultCreds", "GCPServiceAccountFileCreds")]}
    backend = {**closed, "required": ["type", "project_id", "creds"], "properties": {
        **{f: {} for f in fields_of("GCPBackendFileConfigWithCreds", gcp)},
        "type": {"const": "gcp"}, "creds": creds}}
    project = {**closed, "required": ["name"], "properties": {
        **{f: {} for f in fields_of("ProjectConfig", server)},
        "backends": {"type": "array", "items": backend}}}
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$comment": f"dstack@{DSTACK_COMMIT[:7]} src/dstack/_internal/server/services/config.py "
                    "ServerConfig, ProjectConfig; core/backends/gcp/models.py "
                    "GCPBackendFileConfigWithCreds, GCPDefaultCreds, GCPServiceAccountFileCreds "
                    "(only the gcp backend is modelled)",
        **closed, "required": ["projects"],
        "properties": {**{f: {} for f in fields_of("ServerConfig", server)},
                       "projects": {"type": "array", "items": project}},
    }


def crd_schema(text, version):
    for doc in yaml.safe_load_all(text):
        if doc and doc.get("kind") == "CustomResourceDefinition":
            for v in doc["spec"]["versions"]:
                if v["name"] == version:
                    return v["schema"]["openAPIV3Schema"]
    raise SystemExit(f"no version {version} in the CRD")


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    dstack, mpi, jobset, out = sys.argv[1:]
    out = pathlib.Path(out)
    (out / "dstack-task.json").write_text(json.dumps(dstack_task(dstack), indent=1) + "\n")
    (out / "dstack-fleet.json").write_text(json.dumps(dstack_fleet(dstack), indent=1) + "\n")
    (out / "dstack-server.json").write_text(json.dumps(dstack_server(dstack), indent=1) + "\n")
    mpijob = crd_schema(show(mpi, MPI_COMMIT, "manifests/base/kubeflow.org_mpijobs.yaml"),
                        "v2beta1")
    (out / "mpijob-v2beta1.json").write_text(json.dumps(mpijob, separators=(",", ":")) + "\n")
    js = crd_schema(show(jobset, JOBSET_COMMIT,
                         "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"), "v1alpha2")
    (out / "jobset-v1alpha2.json").write_text(json.dumps(js, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

# Spack package for cnet. Use it from a local Spack repository:
#   spack repo create ~/spack-cnet && mkdir -p ~/spack-cnet/packages/cnet
#   cp contrib/spack/package.py ~/spack-cnet/packages/cnet/ && spack repo add ~/spack-cnet
#   spack develop --path /path/to/your/cnet/checkout cnet@main   (or set `git` below to your site's mirror)
#   spack install cnet +slurm-plugins ^slurm@22.05.8      (or ^slurm@24.11.6; an external Slurm: README.md here)

import os

from spack.package import *


class Cnet(CMakePackage, CudaPackage):
    """Slurm plugins and tools for GPU/RDMA clusters: resource templates, GPU/NIC topology as GRES,
    a PMIx + UCX/NCCL launcher for pipeline- and data-parallel inference, PyTorch bootstrap, topology
    discovery, link benchmarks and node health checks."""

    # cnet has no public home yet: point these at your site's mirror, or use `spack develop` as above.
    homepage = "https://git.example.org/cnet"
    git = "https://git.example.org/cnet.git"

    version("main", branch="main")

    variant("slurm-plugins", default=True,
            description="Build the Slurm plugins: cnet.so (SPANK), job_submit/cnet and gres/rdma")
    # CudaPackage adds +cuda and cuda_arch: the cuBLAS stage path and the NCCL channel.

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.25:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("slurm")  # slurm/spank.h and libslurm (cnet-pool), also without the plugins
    depends_on("pmix@4:")
    depends_on("ucx")
    depends_on("hwloc@2:")
    depends_on("openblas")
    depends_on("boost+program_options")
    depends_on("nlohmann-json")
    depends_on("openssl")  # cnet-perf -s/-c: HMAC of the shared key
    depends_on("onnx")  # ONNX models: parse, checker, shape inference
    depends_on("protobuf")
    depends_on("libjpeg-turbo")  # images for vision models
    depends_on("libpng")
    depends_on("graphviz")  # cnet-topo --format svg: Graphviz's layout (libgvc)
    depends_on("nccl", when="+cuda")

    # job_submit/cnet and gres/rdma are built against Slurm's internal headers and config.h, so they
    # need the source of exactly the Slurm they will be loaded into (its plugin ABI changes with every
    # release). These are the tarballs (and checksums) of Spack's own slurm package, one entry per Slurm
    # version cnet's plugins are built for; the releases cnet supports are 22.05 and 24.11 (README).
    _slurm_sources = {
        "22-05-7-1": "2ad7e8a415d54d45977ab64b4e73c891154d2f41a04505fedf6f8d3df385acb1",
        "22-05-8-1": "8c8f6a26a5d51e6c63773f2e02653eb724540ee8b360125c8d7732314ce737d6",
        "22-05-9-1": "c9aaa2362b5bf7a4745c8bf90e8dd2ca50802f1241dd1f5220aec8448c09b514",
        "24-11-6-1": "282708483326f381eb001a14852a1a82e65e18f37b62b7a5f4936c0ed443b600",
    }
    for _tag, _sha in _slurm_sources.items():
        # 22.05.8 matches both Spack's slurm@22-05-8-1 and an external Slurm reporting 22.05.8
        _release = ".".join(_tag.split("-")[:3])
        resource(
            name="slurm-source",
            url=f"https://github.com/SchedMD/slurm/archive/slurm-{_tag}.tar.gz",
            sha256=_sha,
            destination="slurm-source",
            when=f"+slurm-plugins ^slurm@{_release}",
        )
    conflicts("+slurm-plugins", when="^slurm@:22.04,22.06:24.10,24.12:",
              msg="cnet's controller-side plugins are built and tested for Slurm 22.05 and 24.11; use ~slurm-plugins "
                  "with other releases, or add that release's source above and build it as the README says")

    def _slurm_source(self):
        found = find(join_path(self.stage.source_path, "slurm-source"), "configure.ac", recursive=True)
        return os.path.dirname(min(found, key=len)) if found else None  # the top of the tree

    @run_before("cmake")
    def configure_slurm_source(self):
        """Configure the fetched Slurm tree once, as the plugins need its config.h."""
        src = self._slurm_source()
        if self.spec.satisfies("+slurm-plugins") and src:
            with working_dir(src):
                Executable("./configure")(
                    f"--prefix={self.spec['slurm'].prefix}", "--enable-pam=no", "--disable-debug",
                    f"--with-pmix={self.spec['pmix'].prefix}", f"--with-hwloc={self.spec['hwloc'].prefix}")

    def cmake_args(self):
        plugins = self.spec.satisfies("+slurm-plugins")
        return [
            self.define("CNET_WITH_CUDA", "ON" if self.spec.satisfies("+cuda") else "OFF"),
            self.define("CNET_BUILD_SLURM_PLUGINS", plugins),
            self.define("CNET_SLURM_SOURCE", (self._slurm_source() or "") if plugins else ""),
            # Spack never writes into another package's prefix: the plugins go into this one, and
            # slurm.conf's PluginDir lists it after Slurm's own (README.md here).
            self.define("CNET_SLURM_PLUGIN_DIR", self.prefix.lib.slurm),
            # The tests need a root-run minicluster and the shared fixtures: CI runs them, not Spack.
            self.define("CNET_BUILD_TESTS", False),
        ]

    def setup_run_environment(self, env):
        env.set("CNET_SLURM_PLUGIN_DIR", self.prefix.lib.slurm)

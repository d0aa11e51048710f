// cnet-run: pipeline- and data-parallel inference of a sequential model across the ranks of a job.
//   srun --mpi=pmix -N2 --ntasks-per-node=1 cnet-run --model M --input I --output O --num-stages 2 [--verify]
//   cnet-run --local 2 ...                     the same job on this machine, no Slurm
//   cnet-run make-model --output M [--layers 8 --hidden 512]   a deterministic example model
//   cnet-run make-input --output I --rows N (--width W | --model M)
// Exit: 0 ok, 1 --verify found a difference, 2 bad arguments or input files, 3 a stage failed.
#include <boost/program_options.hpp>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cnet/common/files.hpp"
#include "cnet/common/version.hpp"
#include "cnet/inference/gpu_stage.hpp"
#include "cnet/inference/inference_job.hpp"
#include "cnet/inference/model.hpp"
#include "cnet/inference/predictions.hpp"
#include "cnet/transport/bootstrap.hpp"
#include "cnet/transport/local_launcher.hpp"

namespace po = boost::program_options;
using namespace cnet::inference;

namespace {

constexpr const char* kUsage =
    "usage: cnet-run [run options]            (under srun --mpi=pmix, or with --local N)\n"
    "       cnet-run make-model --output FILE [--layers N --hidden N --outputs N --dtype F32|F16|BF16 --seed N]\n"
    "       cnet-run make-input --output FILE --rows N (--width N | --model FILE) [--seed N]\n"
    "       cnet-run make-input --output FILE --images DIR [--resize N --crop N --mean R,G,B --std R,G,B]\n"
    "exit: 0 ok, 1 --verify found a difference, 2 bad arguments or input, 3 a stage failed\n";

int bad_arguments(const std::string& what, const po::options_description& opts) {
  std::cerr << "cnet-run: " << what << "\n" << kUsage << opts;
  return kBadInput;
}

int make_files(const std::string& command, int argc, char** argv) {
  ExampleModel m;
  std::string output, model, images, mean = "0.485,0.456,0.406", std_dev = "0.229,0.224,0.225";
  ImagePreprocess pre;
  std::size_t rows = 0, width = 0;
  unsigned seed = 1;
  po::options_description opts("cnet-run " + command);
  opts.add_options()("help,h", "show this help")("output,o", po::value(&output)->required(), "file to write (safetensors)")
      ("seed", po::value(&seed)->default_value(seed), "random seed (the same seed gives the same bytes)");
  if (command == "make-model")
    opts.add_options()("layers", po::value(&m.layers)->default_value(m.layers), "residual MLP blocks")
        ("hidden", po::value(&m.hidden)->default_value(m.hidden), "row width")
        ("expansion", po::value(&m.expansion)->default_value(m.expansion), "MLP inner width = expansion x hidden")
        ("outputs", po::value(&m.outputs)->default_value(0), "width of the head (0: hidden)")
        ("dtype", po::value(&m.dtype)->default_value(m.dtype), "weights' dtype: F32, F16 or BF16");
  else
    opts.add_options()("rows", po::value(&rows), "rows in the input (random values)")("width", po::value(&width), "row width")
        ("model", po::value(&model), "take the width from this model")
        ("images", po::value(&images), "instead: these images (a folder or a .txt list), preprocessed as cnet-run does, one row each")
        ("resize", po::value(&pre.resize)->default_value(pre.resize), "images: shorter side resized to this")
        ("crop", po::value(&pre.crop)->default_value(pre.crop), "images: centre crop")
        ("mean", po::value(&mean)->default_value(mean), "images: per-channel mean (R,G,B)")
        ("std", po::value(&std_dev)->default_value(std_dev), "images: per-channel standard deviation (R,G,B)");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, opts), vm);
    if (vm.count("help")) {
      std::cout << opts;
      return 0;
    }
    po::notify(vm);
    if (command == "make-model" && (m.layers == 0 || m.hidden == 0 || m.expansion == 0 || m.layers > 10000))
      throw po::error("--layers (1..10000), --hidden and --expansion must be positive");
    if (command == "make-model" && m.dtype != "F32" && m.dtype != "F16" && m.dtype != "BF16")
      throw po::error("--dtype must be F32, F16 or BF16, not '" + m.dtype + "'");
    if (command == "make-input") {
      if (!model.empty() && cnet::common::same_file(output, model))
        throw po::error("--output " + output + " is the same file as --model " + model + ": writing it would destroy the model; choose another output file");
      if (!model.empty()) {
        width = open_model(model).spec.input_width();
      }
      if (!images.empty()) {
        if (pre.crop == 0 || pre.crop > pre.resize || pre.resize > 8192) throw po::error("--crop must be 1 to --resize, --resize at most 8192");
        try {
          pre.mean = parse_channel_triple(mean, "--mean", false);
          pre.std = parse_channel_triple(std_dev, "--std", true);
        } catch (const std::invalid_argument& e) {
          throw po::error(e.what());
        }
      } else if (width == 0 || rows == 0) {
        throw po::error("make-input needs --rows and a --width (or --model) above 0, or --images");
      }
    }
  } catch (const po::error& e) {
    return bad_arguments(e.what(), opts);
  } catch (const std::exception& e) {
    std::cerr << "cnet-run: " << e.what() << "\n";
    return kBadInput;
  }
  try {
    seed = seed ? seed : 1;
    m.seed = seed;
    // Written beside the output and renamed over it once complete: a failure or a kill midway leaves
    // whatever the name held before, never a half-written file by that name.
    const std::string partial = output + ".partial-" + std::to_string(getpid());
    try {
      if (command == "make-model") write_example_model(partial, m);
      else if (!images.empty()) write_image_input(partial, list_images(images), pre);
      else write_example_input(partial, rows, width, seed);
      if (std::rename(partial.c_str(), output.c_str()) != 0) throw std::runtime_error("cannot rename " + partial + " to " + output + ": " + std::strerror(errno));
    } catch (...) {
      std::remove(partial.c_str());
      throw;
    }
    std::fprintf(stderr, "cnet-run: wrote %s\n", output.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "cnet-run: " << e.what() << "\n";
    return kBadInput;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (cnet::common::print_version_if_asked(argc, argv, "cnet-run")) return 0;
  if (argc > 1 && (std::string(argv[1]) == "make-model" || std::string(argv[1]) == "make-input"))
    return make_files(argv[1], argc - 1, argv + 1);

  InferenceOptions o;
  std::string scheme = "pipeline";
  unsigned local = 0, timeout_s = 120, gpus_per_stage = 0;
  std::string peer_failure = "on", resume, stage_devices, stage_layers, stage_flag;  // stage_flag: as given, for messages
  std::string mean = "0.485,0.456,0.406", std_dev = "0.229,0.224,0.225";
  po::options_description opts("cnet-run options");
  opts.add_options()("help,h", "show this help")("version", "print the version")
      ("name", po::value(&o.name), "job name: every line says cnet-run NAME, and the --json summary names it")
      ("model", po::value(&o.model)->required(), "an ONNX model (MODEL.onnx), or weights with their layer list (safetensors)")
      ("input", po::value(&o.input)->required(), "a folder of JPEG/PNG images (or a .txt list of them), or input rows: a tensor 'input' [rows, width] (safetensors)")
      ("output", po::value(&o.output)->required(), "predictions (FILE.jsonl or FILE.csv: top-k classes per input), or the output tensor (FILE.safetensors); its .progress file records what is done")
      ("output-tensor", po::value(&o.output_tensor), "with predictions as --output: keep the raw output tensor (logits) here too (safetensors)")
      ("top-k", po::value(&o.top_k)->default_value(o.top_k), "classes per input in the predictions")
      ("labels", po::value(&o.labels), "class names, one per line in class order (e.g. ImageNet's 1000), for the predictions")
      ("resize", po::value(&o.inputs.images.resize)->default_value(o.inputs.images.resize), "images: the shorter side is resized to this (bilinear)")
      ("crop", po::value(&o.inputs.images.crop)->default_value(o.inputs.images.crop), "images: then a centre crop of this size (the model's input size)")
      ("mean", po::value(&mean)->default_value(mean), "images: per-channel mean subtracted after scaling to [0, 1] (R,G,B)")
      ("std", po::value(&std_dev)->default_value(std_dev), "images: per-channel standard deviation divided by (R,G,B)")
      ("skip-bad-inputs", "leave out files that are not readable images (listed in the summary); by default one stops the job before it computes")
      ("parallel-scheme", po::value(&scheme)->default_value(scheme), "pipeline, data or hybrid (pipeline groups x replicas)")
      ("num-stages", po::value(&o.num_stages)->default_value(0), "pipeline stages (default: every rank is one)")
      ("stage-layers", po::value(&stage_layers), "layers per stage, in order (e.g. 10,6: more on a faster node); default: split by estimated cost")
      ("fixed-split", "keep every layer on its planned stage; by default the layer at each cut between CPU stages goes to whichever of the two keeps them even")
      ("micro-batch", po::value(&o.micro_batch)->default_value(o.micro_batch), "rows per micro-batch")
      ("threads", po::value(&o.blas_threads)->default_value(o.blas_threads), "BLAS threads per rank")
      ("gpu-per-stage", po::value(&gpus_per_stage)->default_value(0), "1: each stage computes on its task's GPU (cuBLAS; the GPU Slurm bound to the task, else the node-local rank's of those visible); 0: on the CPU")
      ("stage-devices", po::value(&stage_devices), "cpu or gpu per stage, in order (e.g. cpu,gpu): CPU and GPU stages in one job; --verify then needs --verify-tolerance")
      ("resume", po::value(&resume)->implicit_value("yes"),
       "go on from OUTPUT.progress, redoing only what it does not record; --resume=auto: start afresh when there is none (sbatch --requeue)")
      ("verify", "afterwards run the whole model on one process and compare (bit-identical required)")
      ("verify-tolerance", po::value(&o.verify_tolerance)->default_value(0), "accept a largest relative error up to this")
      ("timeout", po::value(&timeout_s)->default_value(timeout_s), "seconds one transfer may take before the stage is called hung")
      ("peer-failure", po::value(&peer_failure)->default_value(peer_failure), "on: a dead stage ends the job at once (same node: shared memory, its process watched; else tcp/ib); off: no detection")
      ("local", po::value(&local), "run N ranks on this machine with cnet's own PMIx server")
      ("json", "print a JSON summary at the end")
      ("trace", po::value(&o.trace), "write when each rank computed each micro-batch to this file (Chrome trace JSON: Perfetto, chrome://tracing)");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, opts), vm);
    if (vm.count("help")) {
      std::cout << kUsage << opts;
      return 0;
    }
    po::notify(vm);
    if (scheme == "pipeline") o.scheme = Scheme::pipeline;
    else if (scheme == "data") o.scheme = Scheme::data;
    else if (scheme == "hybrid") o.scheme = Scheme::hybrid;
    else throw po::error("--parallel-scheme must be pipeline, data or hybrid, not '" + scheme + "'");
    if (o.micro_batch == 0 || o.micro_batch > (1u << 24)) throw po::error("--micro-batch must be between 1 and 16777216 rows");
    if (o.blas_threads < 1 || o.blas_threads > 1024) throw po::error("--threads must be between 1 and 1024");
    if (timeout_s == 0) throw po::error("--timeout must be at least 1 second");
    if (peer_failure != "on" && peer_failure != "off") throw po::error("--peer-failure must be on or off");
    if (o.verify_tolerance < 0 || o.verify_tolerance >= 1) throw po::error("--verify-tolerance must be in [0, 1)");
    if (gpus_per_stage > 1)
      throw po::error("--gpu-per-stage: a stage runs on one GPU (0 or 1); to use more GPUs run more stages or replicas (srun -n)");
    if (vm.count("stage-devices") && !vm["gpu-per-stage"].defaulted())
      throw po::error("--stage-devices and --gpu-per-stage both say where stages compute: give one (--stage-devices gpu is --gpu-per-stage 1)");
    try {
      o.stage_devices = vm.count("stage-devices") ? parse_stage_devices(stage_devices) : std::vector<bool>(gpus_per_stage, true);
      stage_flag = vm.count("stage-devices") ? "--stage-devices " + stage_devices : "--gpu-per-stage " + std::to_string(gpus_per_stage);
    } catch (const GpuPlanError& e) {
      throw po::error(e.what());
    }
    if (vm.count("verify") && mixed_devices(o.stage_devices) && vm["verify-tolerance"].defaulted())
      throw po::error("--verify of CPU and GPU stages in one job cannot be bit-identical to either: give --verify-tolerance (e.g. 1e-3)");
    if (vm.count("stage-layers")) {
      try {
        o.stage_layers = parse_stage_layers(stage_layers);
      } catch (const std::invalid_argument& e) {
        throw po::error(e.what());
      }
    }
    if (vm.count("trace") && o.trace.empty()) throw po::error("--trace needs a file name, e.g. --trace trace.json");
    if (o.inputs.images.crop == 0 || o.inputs.images.resize > 8192 || o.inputs.images.crop > o.inputs.images.resize)
      throw po::error("--crop must be at least 1 and at most --resize (" + std::to_string(o.inputs.images.resize) + "), and --resize at most 8192");
    try {
      o.inputs.images.mean = parse_channel_triple(mean, "--mean", false);
      o.inputs.images.std = parse_channel_triple(std_dev, "--std", true);
    } catch (const std::invalid_argument& e) {
      throw po::error(e.what());
    }
    o.inputs.skip_bad = vm.count("skip-bad-inputs") > 0;
    if (o.top_k == 0 || o.top_k > 100000) throw po::error("--top-k must be between 1 and 100000");
    if (!writes_predictions(o.output) && (vm.count("output-tensor") || vm.count("labels") || !vm["top-k"].defaulted()))
      throw po::error("--output-tensor, --labels and --top-k shape predictions: give --output FILE.jsonl or FILE.csv (" + o.output + " is the output tensor itself)");
    if (vm.count("output-tensor") && (o.output_tensor.empty() || writes_predictions(o.output_tensor)))
      throw po::error("--output-tensor needs a safetensors file name, e.g. --output-tensor logits.safetensors");
    if (vm.count("local") && (local == 0 || local > 256)) throw po::error("--local takes 1 to 256 ranks");
    if (vm.count("resume")) {
      if (resume != "yes" && resume != "auto") throw po::error("--resume takes no value, or =auto");
      o.resume = resume == "auto" ? InferenceOptions::Resume::automatic : InferenceOptions::Resume::yes;
    }
    o.verify = vm.count("verify") > 0;
    o.json = vm.count("json") > 0;
    o.swing_cuts = vm.count("fixed-split") == 0;
    o.detect_peer_failure = peer_failure == "on";
    o.timeout = std::chrono::seconds(timeout_s);
  } catch (const po::error& e) {
    return bad_arguments(e.what(), opts);
  }
  // No GPU, no CUDA runtime or a cnet built without CUDA: one line and exit 2, before any rank computes.
  // Where every stage is on a GPU every task needs one; a mixed job's CPU stages may run on CPU-only
  // nodes, so under srun its GPU stages find out for themselves (--local runs them all here).
  if (any_gpu(o.stage_devices) && (!mixed_devices(o.stage_devices) || local > 0)) {
    try {
      cnet::inference::CudaStageModule::load();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cnet-run: %s: %s\n", stage_flag.c_str(), e.what());
      return kBadInput;
    }
  }

  if (local > 0) {  // become the launcher: the same command, minus --local, once per rank
    auto launch = cnet::transport::relaunch_locally(local, argc, argv);
    try {
      return cnet::transport::run_local(launch);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cnet-run: %s\n", e.what());
      return kStageFailure;
    }
  }
  try {
    auto boot = cnet::transport::PmixBootstrap::connect();
    return run_inference(*boot, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnet-run: %s\n", e.what());
    return kStageFailure;
  }
}

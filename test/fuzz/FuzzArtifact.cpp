//===- FuzzArtifact.cpp - Mutated artifacts through the model loader ------===//
//
// What `kiln_model_create` does with the bytes appended to an artifact
// `.so`: find the trailer, check the checksum, decode and validate the plan,
// and create a model on the host backend (which needs no GPU; kernels are
// built only by the first run). An input that starts with the payload magic
// is wrapped in a trailer with the right checksum, so that mutations reach
// the decoder and the validation rather than stopping at the checksum; any
// other input is read as a whole image, trailer included.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/ArtifactFile.h"
#include "kiln/runtime/Model.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace kiln::rt;
  std::string image(reinterpret_cast<const char *>(data), size);
  if (size >= sizeof(kArtifactMagic) &&
      std::memcmp(data, kArtifactMagic, sizeof(kArtifactMagic)) == 0)
    image = appendArtifactPayload(std::string(), image);

  Artifact artifact;
  if (!loadArtifactImage(image.data(), image.size(), artifact).isOk())
    return 0;
  std::unique_ptr<Model> model;
  if (!Model::create(std::move(artifact), Backend::Host, model).isOk())
    return 0;
  // What kiln-run prints about a model reads every buffer and step.
  (void)model->info();
  // Symbolic dims: learned from the stored input shapes, and the plan
  // written at the least and greatest values, as runs do.
  if (!model->dims().empty()) {
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < model->numInputs(); ++i)
      shapes.push_back(model->input(i).shape);
    std::vector<int64_t> values;
    (void)model->bindDims(shapes, values);
    for (bool top : {false, true}) {
      std::vector<int64_t> dims;
      for (const DimRange &d : model->dims())
        dims.push_back(top ? d.max : d.min);
      Artifact shaped;
      std::string error;
      (void)instantiatePlan(model->artifact(), dims, shaped, error);
    }
  }
  return 0;
}

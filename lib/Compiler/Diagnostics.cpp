//===- Diagnostics.cpp - diagnostics that name the ONNX node --------------===//

#include "kiln/Compiler/Diagnostics.h"

#include "kiln/Dialect/Kiln/TensorNames.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln {

namespace {

/// Where a diagnostic is, as the importer writes locations.
struct ModelPlace {
  std::string file;
  llvm::SmallVector<llvm::StringRef> names;
};

/// The file and the node or tensor names of `loc`, or nothing when it is not
/// a model location: none in a file, or one with a real line.
std::optional<ModelPlace> modelPlaceOf(Location loc) {
  ModelPlace place;
  bool hasLine = false;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      hasLine |= file.getLine() != 0;
      if (place.file.empty())
        place.file = file.getFilename().str();
    }
    return WalkResult::advance();
  });
  if (hasLine || place.file.empty())
    return std::nullopt;
  place.names = onnxNodeNames(loc);
  return place;
}

const char *severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

} // namespace

ModelDiagnosticHandler::ModelDiagnosticHandler(MLIRContext *context,
                                               llvm::raw_ostream &os)
    : ScopedDiagnosticHandler(context), os(os) {
  setHandler([this](Diagnostic &diag) { return print(diag); });
}

LogicalResult ModelDiagnosticHandler::print(Diagnostic &diag) {
  std::optional<ModelPlace> place = modelPlaceOf(diag.getLocation());
  if (!place)
    return failure();
  // After what the tool printed so far, also where both streams meet.
  llvm::outs().flush();
  os << place->file << ": ";
  if (!place->names.empty()) {
    os << "at ";
    for (auto [i, name] : llvm::enumerate(place->names))
      os << (i ? ", '" : "'") << name << "'";
    os << ": ";
  }
  os << severityName(diag.getSeverity()) << ": " << diag << "\n";
  for (Diagnostic &note : diag.getNotes())
    os << "  note: " << note << "\n";
  os.flush();
  return success();
}

/// Whether `text` names `option` as a word of its own (not inside a longer
/// option name).
static bool namesOption(llvm::StringRef text, llvm::StringRef option) {
  auto isNamePart = [](char c) { return llvm::isAlnum(c) || c == '-'; };
  for (size_t at = text.find(option); at != llvm::StringRef::npos;
       at = text.find(option, at + 1)) {
    size_t end = at + option.size();
    if ((at == 0 || !isNamePart(text[at - 1])) &&
        (end == text.size() || !isNamePart(text[end])))
      return true;
  }
  return false;
}

OptionFlagNotes::OptionFlagNotes(MLIRContext *context, std::string tool,
                                 std::vector<OptionFlag> flags)
    : ScopedDiagnosticHandler(context), tool(std::move(tool)),
      flags(std::move(flags)) {
  setHandler([this](Diagnostic &diag) {
    std::string text = diag.str();
    for (const OptionFlag &entry : this->flags)
      if (namesOption(text, entry.option))
        diag.attachNote() << entry.option << " is " << this->tool << "'s "
                          << entry.flag;
    // The handlers registered before this one print it.
    return failure();
  });
}

} // namespace kiln

kiln::CollectedDiagnostics::CollectedDiagnostics(MLIRContext *context)
    : os(messages), lines(sourceMgr, context, os), models(context, os) {}

std::string kiln::CollectedDiagnostics::text() {
  os.flush();
  return llvm::StringRef(messages).rtrim().str();
}

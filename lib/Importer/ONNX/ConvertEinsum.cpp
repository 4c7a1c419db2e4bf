//===- ConvertEinsum.cpp - Einsum as transposes, sums and matmuls ---------===//
//
// An equation is taken apart the way numpy's einsum does it without
// optimization: repeated labels of one operand become its diagonal, labels
// nobody else needs are summed away, and operands are contracted left to
// right, each pair as one batched kiln.matmul between transposes and
// reshapes. The result is transposed to the output's label order.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln {

namespace {

/// A label: a letter's character code, or kEllipsis + k for the k-th dim
/// the ellipsis stands for (counted in the widest operand, right-aligned).
using Label = int;
constexpr Label kEllipsis = 256;

/// A value with one label per dim.
struct Term {
  Value value;
  SmallVector<Label> labels;
};

struct EinsumConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  /// The labels of one side of the equation; `ellipsisDims` is how many dims
  /// the ellipsis stands for there, `widest` the most it stands for anywhere.
  FailureOr<SmallVector<Label>> parseTerm(StringRef text, int64_t ellipsisDims,
                                          int64_t widest) {
    SmallVector<Label> labels;
    bool seenEllipsis = false;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text.substr(i).starts_with("...")) {
        if (seenEllipsis)
          return error() << "more than one ellipsis in '" << text << "'";
        seenEllipsis = true;
        for (int64_t k = 0; k < ellipsisDims; ++k)
          labels.push_back(kEllipsis + widest - ellipsisDims + k);
        i += 2;
      } else if (llvm::isAlpha(text[i])) {
        labels.push_back(text[i]);
      } else {
        return error() << "unexpected character '" << text[i]
                       << "' in equation term '" << text << "'";
      }
    }
    return labels;
  }

  static int64_t letterCount(StringRef text) {
    return llvm::count_if(text, [](char c) { return llvm::isAlpha(c); });
  }

  Value transpose(Value x, ArrayRef<int64_t> perm) {
    if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      return x;
    auto type = inferTransposeType(loc, typeOf(x), perm);
    return TransposeOp::create(b, loc, *type, x, perm);
  }

  /// `term` with its dims reordered to `order` (a permutation of its labels).
  Term permute(const Term &term, ArrayRef<Label> order) {
    SmallVector<int64_t> perm;
    for (Label l : order)
      perm.push_back(llvm::find(term.labels, l) - term.labels.begin());
    return {transpose(term.value, perm), SmallVector<Label>(order)};
  }

  /// Replaces each label repeated within `term` by the diagonal along it.
  Term takeDiagonals(Term term) {
    for (size_t q = 0; q < term.labels.size(); ++q) {
      auto first = llvm::find(term.labels, term.labels[q]);
      size_t p = first - term.labels.begin();
      if (p == q)
        continue;
      // Move p and q last, view them as one dim of n*n, keep every n+1st.
      SmallVector<Label> order;
      for (size_t d = 0; d < term.labels.size(); ++d)
        if (d != p && d != q)
          order.push_back(term.labels[d]);
      Label label = term.labels[p];
      SmallVector<int64_t> perm;
      for (size_t d = 0; d < term.labels.size(); ++d)
        if (d != p && d != q)
          perm.push_back(d);
      perm.push_back(p);
      perm.push_back(q);
      Value moved = transpose(term.value, perm);
      ArrayRef<int64_t> shape = typeOf(moved).getShape();
      int64_t n = shape.back();
      SmallVector<int64_t> merged(shape.drop_back(2));
      merged.push_back(n * n);
      Value flat = reshape(moved, merged);
      SmallVector<int64_t> starts(merged.size(), 0), steps(merged.size(), 1),
          counts(merged);
      steps.back() = n + 1;
      counts.back() = n;
      Value diagonal = SliceOp::create(
          b, loc, RankedTensorType::get(counts, typeOf(flat).getElementType()),
          flat, starts, steps);
      order.push_back(label);
      return takeDiagonals({diagonal, order});
    }
    return term;
  }

  /// Sums `term` over the labels for which `drop` is true.
  Term sumAway(const Term &term, function_ref<bool(Label)> drop) {
    SmallVector<int64_t> axes;
    Term result{term.value, {}};
    for (auto [d, l] : llvm::enumerate(term.labels)) {
      if (drop(l))
        axes.push_back(d);
      else
        result.labels.push_back(l);
    }
    if (axes.empty())
      return term;
    auto type = inferReduceType(loc, typeOf(term.value), axes, false);
    result.value =
        ReduceSumOp::create(b, loc, *type, term.value, axes, false).getResult();
    return result;
  }

  /// Broadcasts size-1 dims of `term` up to the label's size in `sizes`.
  Term broadcast(const Term &term, const llvm::DenseMap<Label, int64_t> &sizes) {
    ArrayRef<int64_t> shape = typeOf(term.value).getShape();
    SmallVector<int64_t> target;
    for (auto [d, l] : llvm::enumerate(term.labels))
      target.push_back(sizes.lookup(l));
    if (llvm::equal(target, shape))
      return term;
    auto type = RankedTensorType::get(target, typeOf(term.value).getElementType());
    return {ExpandOp::create(b, loc, type, term.value), term.labels};
  }

  /// Contracts two terms over their shared labels that `keep` does not need,
  /// as one batched matmul.
  FailureOr<Term> contract(Term lhs, Term rhs,
                           function_ref<bool(Label)> keep) {
    auto inLhs = [&](Label l) { return llvm::is_contained(lhs.labels, l); };
    auto inRhs = [&](Label l) { return llvm::is_contained(rhs.labels, l); };
    // Labels of one side that neither the other side nor `keep` needs.
    lhs = sumAway(lhs, [&](Label l) { return !keep(l) && !inRhs(l); });
    rhs = sumAway(rhs, [&](Label l) { return !keep(l) && !inLhs(l); });
    SmallVector<Label> batch, lhsFree, rhsFree, summed;
    for (Label l : lhs.labels)
      (inRhs(l) ? (keep(l) ? batch : summed) : lhsFree).push_back(l);
    for (Label l : rhs.labels)
      if (!inLhs(l))
        rhsFree.push_back(l);
    auto sizeOf = [&](const Term &t, ArrayRef<Label> labels) {
      int64_t size = 1;
      for (Label l : labels)
        size *= typeOf(t.value).getDimSize(llvm::find(t.labels, l) -
                                           t.labels.begin());
      return size;
    };
    int64_t batchSize = sizeOf(lhs, batch), m = sizeOf(lhs, lhsFree),
            k = sizeOf(lhs, summed), n = sizeOf(rhs, rhsFree);
    Term l = permute(lhs, llvm::to_vector(llvm::concat<Label>(batch, lhsFree,
                                                               summed)));
    Term r = permute(rhs, llvm::to_vector(llvm::concat<Label>(batch, summed,
                                                               rhsFree)));
    Value lhs3 = reshape(l.value, {batchSize, m, k});
    Value rhs3 = reshape(r.value, {batchSize, k, n});
    auto type = inferMatmulType(loc, typeOf(lhs3), typeOf(rhs3), false, false);
    if (failed(type))
      return failure();
    Value product = MatmulOp::create(b, loc, *type, lhs3, rhs3, false, false);
    SmallVector<int64_t> shape;
    Term result{{}, {}};
    auto append = [&](const Term &from, ArrayRef<Label> labels) {
      for (Label label : labels) {
        shape.push_back(typeOf(from.value).getDimSize(
            llvm::find(from.labels, label) - from.labels.begin()));
        result.labels.push_back(label);
      }
    };
    append(l, batch);
    append(l, lhsFree);
    append(r, rhsFree);
    result.value = reshape(product, shape);
    return result;
  }

  LogicalResult convert() {
    const onnx::AttributeProto *attr = findAttribute(node, "equation");
    if (!attr)
      return error() << "missing attribute 'equation'";
    std::string equation;
    for (char c : attr->s())
      if (c != ' ')
        equation.push_back(c);
    StringRef text(equation);
    auto [lhsText, outText] = text.split("->");
    bool explicitOutput = text.contains("->");
    SmallVector<StringRef> inputTexts;
    lhsText.split(inputTexts, ',');
    if (static_cast<int>(inputTexts.size()) != node.input_size())
      return error() << "equation '" << attr->s() << "' has "
                     << inputTexts.size() << " operands, the node "
                     << node.input_size();

    // Labels per operand, the ellipsis expanded right-aligned.
    SmallVector<Term> terms;
    int64_t widest = 0;
    for (auto [i, t] : llvm::enumerate(inputTexts)) {
      auto value = required(i);
      if (failed(value))
        return failure();
      int64_t dims = typeOf(*value).getRank() - letterCount(t);
      if (dims < 0 || (dims > 0 && !t.contains("...")))
        return error() << "operand " << i << " of rank "
                       << typeOf(*value).getRank() << " does not match '" << t
                       << "'";
      widest = std::max(widest, dims);
      terms.push_back({*value, {}});
    }
    for (auto [i, t] : llvm::enumerate(inputTexts)) {
      int64_t dims = typeOf(terms[i].value).getRank() - letterCount(t);
      auto labels = parseTerm(t, dims, widest);
      if (failed(labels))
        return failure();
      terms[i].labels = *labels;
    }
    SmallVector<Label> outLabels;
    if (explicitOutput) {
      auto labels = parseTerm(outText, widest, widest);
      if (failed(labels))
        return failure();
      outLabels = *labels;
    } else {
      // numpy's implicit output: the ellipsis dims, then the letters that
      // occur once, sorted.
      for (int64_t k = 0; k < widest; ++k)
        outLabels.push_back(kEllipsis + k);
      for (Label l = 'A'; l <= 'z'; ++l) {
        int count = 0;
        for (const Term &t : terms)
          count += llvm::count(t.labels, l);
        if (count == 1)
          outLabels.push_back(l);
      }
    }

    // Each label's size; a dim of 1 broadcasts against any other size.
    llvm::DenseMap<Label, int64_t> sizes;
    for (const Term &t : terms)
      for (auto [d, l] : llvm::enumerate(t.labels)) {
        int64_t dim = typeOf(t.value).getDimSize(d);
        auto [it, inserted] = sizes.try_emplace(l, dim);
        if (inserted || it->second == dim || dim == 1)
          continue;
        if (it->second != 1)
          return error() << "label '"
                         << (l < kEllipsis ? std::string(1, char(l)) : "...")
                         << "' has sizes " << it->second << " and " << dim;
        it->second = dim;
      }
    for (Label l : outLabels)
      if (!sizes.count(l))
        return error() << "output label '" << char(l)
                       << "' is not in any operand";

    for (Term &t : terms)
      t = broadcast(takeDiagonals(t), sizes);
    Term acc = terms.front();
    for (size_t i = 1; i < terms.size(); ++i) {
      auto later = ArrayRef(terms).drop_front(i + 1);
      auto keep = [&](Label l) {
        return llvm::is_contained(outLabels, l) ||
               llvm::any_of(later, [&](const Term &t) {
                 return llvm::is_contained(t.labels, l);
               });
      };
      auto next = contract(acc, terms[i], keep);
      if (failed(next))
        return failure();
      acc = *next;
    }
    acc = sumAway(acc,
                  [&](Label l) { return !llvm::is_contained(outLabels, l); });
    return output(permute(acc, outLabels).value);
  }
};

} // namespace

ArrayRef<OpConversion> getEinsumConversions() {
  static const OpConversion table[] = {
      {"", "Einsum", convertWith<EinsumConverter, &EinsumConverter::convert>},
  };
  return table;
}

} // namespace kiln

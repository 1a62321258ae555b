//===- ONNXOpsRecurrent.cpp - RNN, GRU, LSTM ------------------------------===//
//
// FIR has no loops at the graph level: a recurrent layer over a static
// sequence length T is unrolled, one step after another, with the weights
// as constants (W, R, B and P must be initializers; they usually are):
//   1. layout = 1 inputs ([batch, seq, input]) are permuted to [seq, batch,
//      input], and the outputs back;
//   2. per direction, the input projection of every step at once: XW =
//      matmul(X, W^T) + the biases that do not multiply the state
//      ([T, B, G H], G gates: 1 RNN, 3 GRU z r h, 4 LSTM i o f c);
//   3. each step takes its row of XW (take along the sequence), adds
//      matmul(H, R^T) and applies the cell's equations (ONNX's operator
//      definitions: clip on every gate's input, peepholes, input_forget,
//      linear_before_reset). A step from the zero state (no initial_h or
//      initial_c) leaves out the terms the zeros cancel, so that no zero
//      tensor of a symbolic batch is needed;
//   4. the reverse direction walks the steps backwards; Y holds each
//      direction's states in time order ([T, D, B, H]), Y_h and Y_c the
//      last states ([D, B, H]).
// Activations: Sigmoid, Tanh, Relu. sequence_lens must be absent or T for
// every batch entry.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

namespace {
enum class Cell { RNN, GRU, LSTM };

/// One unrolled layer's emitter.
struct Unroller {
  NodeContext &c;
  std::string name;
  DType dtype;
  std::optional<double> clip;

  std::string hint(const std::string &what) { return name + "_" + what; }
  Value *op(const char *op, std::vector<Value *> operands, const std::string &what,
            Attrs attrs = {}) {
    std::vector<Operand> args;
    for (Value *v : operands) {
      if (!v)
        return nullptr;
      args.push_back(Operand::of(v));
    }
    return c.emit(op, std::move(args), std::move(attrs), hint(what));
  }
  Value *add(Value *a, Value *b, const std::string &what) { return op("add", {a, b}, what); }
  Value *mul(Value *a, Value *b, const std::string &what) {
    return op("multiply", {a, b}, what);
  }
  /// The activation `kind` of a gate's input, clipped first when asked
  /// (`gate`: the clip bounds gates' inputs, not LSTM's cell, as ONNX
  /// Runtime applies it).
  Value *activate(const std::string &kind, Value *v, const std::string &what, bool gate = true) {
    if (v && clip && gate) {
      Attrs bounds;
      bounds.set("min", Attr::makeFloat(-*clip));
      bounds.set("max", Attr::makeFloat(*clip));
      v = op("clip", {v}, what + "_clipped", bounds);
    }
    const char *fn = kind == "Sigmoid" ? "sigmoid" : kind == "Tanh" ? "tanh" : "nn.relu";
    return op(fn, {v}, what);
  }
  Value *constant(TensorData data, const std::string &what) {
    return c.emitConstant(std::move(data), hint(what));
  }
  Value *one(const std::string &prefix) {
    TensorData v(dtype, {});
    v.set(0, 1.0);
    return constant(std::move(v), prefix + "one");
  }
  /// The G parts of [B, G H] along axis 1.
  std::vector<Value *> split(Value *v, int64_t parts, const std::string &what) {
    std::vector<Value *> fields;
    if (!v)
      return fields;
    Attrs attrs;
    attrs.set("indices_or_sections", Attr::makeInt(parts));
    attrs.set("axis", Attr::makeInt(1));
    Value *tuple = op("split", {v}, what, attrs);
    for (int64_t k = 0; tuple && k < parts; ++k) {
      auto get = std::make_unique<Binding>();
      get->kind = ExprKind::Get;
      get->operands.push_back(Operand::of(tuple));
      get->tupleIndex = k;
      get->result = std::make_unique<Value>();
      get->result->type = tuple->type.getFields()[size_t(k)];
      std::string problem;
      fields.push_back(c.importer.addBinding(std::move(get), hint(what + std::to_string(k)),
                                             problem));
    }
    return fields;
  }
};
} // namespace

/// Rows [first, first + count) of direction `d` of W or R ([D, G H, K]),
/// transposed: [K, count].
static TensorData transposedRows(const TensorData &w, int64_t d, int64_t first, int64_t count) {
  int64_t rows = w.getShape()[1], cols = w.getShape()[2];
  TensorData out(w.getDType(), {cols, count});
  for (int64_t j = 0; j < count; ++j)
    for (int64_t k = 0; k < cols; ++k)
      out.set(k * count + j, w.get((d * rows + first + j) * cols + k));
  return out;
}

template <Cell Kind>
static bool convertRecurrent(NodeContext &c) {
  constexpr int64_t gates = Kind == Cell::RNN ? 1 : Kind == Cell::GRU ? 3 : 4;
  Value *x = c.input(0);
  if (!x)
    return false;
  const TensorData *w = c.constant(1), *r = c.constant(2);
  if (!w || !r)
    return c.fail("W and R must be constants (initializers) to unroll the layer");
  const TensorData *bias = c.hasInput(3) ? c.constant(3) : nullptr;
  if (c.hasInput(3) && !bias)
    return c.fail("B must be a constant (an initializer)");
  int64_t layout = c.attrInt("layout", 0);
  if (x->type.getRank() != 3 || (layout != 0 && layout != 1))
    return c.fail("X must have rank 3 and layout 0 or 1");
  std::string name;
  for (const std::string &output : c.node.output())
    if (name.empty())
      name = output;
  Unroller u{c, name, x->type.getDType(), std::nullopt};
  if (layout == 1) {
    Attrs axes;
    axes.set("axes", makeIntList({1, 0, 2}));
    x = u.op("permute_dims", {x}, "seq_first", axes);
    if (!x)
      return false;
  }
  const Dim &seq = x->type.getShape()[0];
  if (seq.isSymbolic())
    return c.fail("the sequence length '" + seq.symbol + "' must be static to unroll (--dim " +
                  seq.symbol + "=SIZE fixes it)");
  int64_t steps = seq.size, directions = w->getShape().size() == 3 ? w->getShape()[0] : 0;
  int64_t hidden = r->getShape().size() == 3 ? r->getShape()[2] : 0;
  if (!directions || hidden < 1 || w->getShape()[1] != gates * hidden ||
      r->getShape() != std::vector<int64_t>{directions, gates * hidden, hidden} ||
      x->type.getShape()[2] != Dim::of(w->getShape()[2]))
    return c.fail("W and R (" + std::to_string(directions) + " direction(s), hidden size " +
                  std::to_string(hidden) + ") do not fit X " + x->type.str() + " with " +
                  std::to_string(gates) + " gate(s)");
  if (c.hasAttr("hidden_size") && c.attrInt("hidden_size", 0) != hidden)
    return c.fail("hidden_size does not match R");
  std::string direction = c.attrString("direction", "forward");
  if (!((direction == "bidirectional" && directions == 2) ||
        ((direction == "forward" || direction == "reverse") && directions == 1)))
    return c.fail("direction '" + direction + "' does not match W's " +
                  std::to_string(directions) + " direction(s)");
  if (bias && bias->getShape() != std::vector<int64_t>{directions, 2 * gates * hidden})
    return c.fail("B must be [num_directions, 2 x gates x hidden_size]");
  if (steps > 4096)
    return c.fail("more than 4096 steps to unroll");
  if (steps == 0)
    return c.fail("the sequence has no steps (its length is 0): nothing to unroll");
  if (c.hasInput(4)) {
    std::optional<std::vector<int64_t>> lengths = c.ints(4, "sequence_lens");
    if (!lengths)
      return false;
    for (int64_t length : *lengths)
      if (length != steps)
        return c.fail("sequence_lens shorter than the sequence are not supported");
  }
  if (!c.attrFloats("activation_alpha").empty() || !c.attrFloats("activation_beta").empty())
    return c.fail("activation_alpha and activation_beta are not supported");
  std::vector<std::string> activations = c.attrStrings("activations");
  const std::vector<std::string> defaults =
      Kind == Cell::RNN   ? std::vector<std::string>{"Tanh"}
      : Kind == Cell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  if (activations.empty())
    for (int64_t d = 0; d < directions; ++d)
      activations.insert(activations.end(), defaults.begin(), defaults.end());
  // RNN's schema default is ["Tanh", "Tanh"] (one per direction of a
  // bidirectional layer); a one-directional layer that writes it out uses
  // the first, as ONNX Runtime does.
  if (Kind == Cell::RNN && directions == 1 && activations.size() == 2)
    activations.resize(1);
  if (activations.size() != defaults.size() * size_t(directions))
    return c.fail("activations needs " + std::to_string(defaults.size() * directions) +
                  " entries");
  for (const std::string &kind : activations)
    if (kind != "Sigmoid" && kind != "Tanh" && kind != "Relu")
      return c.fail("activation '" + kind + "' is not supported (Sigmoid, Tanh and Relu are)");
  if (c.hasAttr("clip"))
    u.clip = c.attrFloat("clip", 0);
  bool inputForget = Kind == Cell::LSTM && c.attrInt("input_forget", 0) != 0;
  bool linearBeforeReset = Kind == Cell::GRU && c.attrInt("linear_before_reset", 0) != 0;
  const TensorData *peepholes = nullptr;
  if (Kind == Cell::LSTM && c.hasInput(7) && !(peepholes = c.constant(7)))
    return c.fail("P must be a constant (an initializer)");
  if (peepholes && peepholes->getShape() != std::vector<int64_t>{directions, 3 * hidden})
    return c.fail("P must be [num_directions, 3 x hidden_size]");
  if (!isFloatDType(u.dtype) || w->getDType() != u.dtype || r->getDType() != u.dtype)
    return c.fail("X, W and R must be float tensors of one dtype");

  // Per direction: steps 2 to 4.
  auto slice = [&](const TensorData *data, int64_t d, int64_t first, int64_t count) {
    TensorData out(u.dtype, {count});
    for (int64_t j = 0; j < count; ++j)
      out.set(j, data ? data->get(d * data->getShape()[1] + first + j) : 0.0);
    return out;
  };
  auto stateOf = [&](size_t input, int64_t d, const std::string &what) -> Value * {
    if (!c.hasInput(input))
      return nullptr;
    TensorData index(DType::i64, {});
    index.setInt(0, d);
    Attrs axis;
    axis.set("axis", Attr::makeInt(0));
    return u.op("take", {c.input(input), u.constant(std::move(index), what + "_dir")}, what,
                axis);
  };
  std::vector<Value *> sequences, lastH, lastC;
  for (int64_t d = 0; d < directions; ++d) {
    std::string dir = directions == 2 ? (d ? "bw_" : "fw_") : "";
    const std::string *act = &activations[size_t(d) * defaults.size()];
    // Step 2: biases outside the state's product (for GRU's h gate with
    // linear_before_reset, R's bias stays with the state).
    TensorData inputBias(u.dtype, {gates * hidden});
    for (int64_t j = 0; j < gates * hidden; ++j) {
      bool stateSide = linearBeforeReset && j >= 2 * hidden;
      double wb = bias ? bias->get(d * 2 * gates * hidden + j) : 0.0;
      double rb = bias && !stateSide ? bias->get(d * 2 * gates * hidden + gates * hidden + j) : 0.0;
      inputBias.set(j, wb + rb);
    }
    Value *projected = u.add(u.op("matmul", {x, u.constant(transposedRows(*w, d, 0, gates * hidden),
                                                           dir + "w")},
                                  dir + "xw"),
                             u.constant(std::move(inputBias), dir + "xb"), dir + "xwb");
    Value *recurrent = nullptr, *resetRecurrent = nullptr, *resetBias = nullptr;
    if (Kind == Cell::GRU) {
      recurrent = u.constant(transposedRows(*r, d, 0, 2 * hidden), dir + "r_zr");
      resetRecurrent = u.constant(transposedRows(*r, d, 2 * hidden, hidden), dir + "r_h");
      if (linearBeforeReset)
        resetBias = u.constant(slice(bias, d, gates * hidden + 2 * hidden, hidden), dir + "rb_h");
    } else {
      recurrent = u.constant(transposedRows(*r, d, 0, gates * hidden), dir + "r");
    }
    Value *peepI = nullptr, *peepO = nullptr, *peepF = nullptr;
    if (peepholes) {
      peepI = u.constant(slice(peepholes, d, 0, hidden), dir + "p_i");
      peepO = u.constant(slice(peepholes, d, hidden, hidden), dir + "p_o");
      peepF = u.constant(slice(peepholes, d, 2 * hidden, hidden), dir + "p_f");
    }
    Value *h = stateOf(5, d, dir + "h0"), *cell = Kind == Cell::LSTM ? stateOf(6, d, dir + "c0")
                                                                      : nullptr;
    std::vector<Value *> states(size_t(steps), nullptr);
    for (int64_t k = 0; k < steps; ++k) {
      int64_t t = d == 1 || direction == "reverse" ? steps - 1 - k : k;
      std::string s = dir + "t" + std::to_string(t) + "_";
      TensorData index(DType::i64, {});
      index.setInt(0, t);
      Attrs axis;
      axis.set("axis", Attr::makeInt(0));
      Value *xw = u.op("take", {projected, u.constant(std::move(index), s + "index")}, s + "x",
                       axis);
      if (Kind == Cell::RNN) {
        Value *pre = h ? u.add(xw, u.op("matmul", {h, recurrent}, s + "hr"), s + "pre") : xw;
        h = u.activate(act[0], pre, s + "h");
      } else if (Kind == Cell::LSTM) {
        Value *pre = h ? u.add(xw, u.op("matmul", {h, recurrent}, s + "hr"), s + "pre") : xw;
        std::vector<Value *> g = u.split(pre, 4, s + "gate"); // i, o, f, c
        if (g.size() != 4)
          return false;
        Value *iPre = g[0], *oPre = g[1], *fPre = g[2];
        if (peepI && cell) {
          iPre = u.add(iPre, u.mul(peepI, cell, s + "pi"), s + "i_pre");
          fPre = u.add(fPre, u.mul(peepF, cell, s + "pf"), s + "f_pre");
        }
        Value *i = u.activate(act[0], iPre, s + "i");
        Value *candidate = u.activate(act[1], g[3], s + "g");
        Value *kept = u.mul(i, candidate, s + "ig");
        if (cell) {
          Value *f = inputForget ? u.op("subtract", {u.one(s), i}, s + "f")
                                 : u.activate(act[0], fPre, s + "f");
          cell = u.add(u.mul(f, cell, s + "fc"), kept, s + "c");
        } else {
          cell = kept;
        }
        if (peepO)
          oPre = u.add(oPre, u.mul(peepO, cell, s + "po"), s + "o_pre");
        Value *o = u.activate(act[0], oPre, s + "o");
        h = u.mul(o, u.activate(act[2], cell, s + "ch", /*gate=*/false), s + "h");
      } else { // GRU: z, r, h
        std::vector<Value *> g = u.split(xw, 3, s + "xgate");
        if (g.size() != 3)
          return false;
        Value *zPre = g[0], *rPre = g[1];
        Value *stateZR = h ? u.op("matmul", {h, recurrent}, s + "hzr") : nullptr;
        if (stateZR) {
          std::vector<Value *> hg = u.split(stateZR, 2, s + "hgate");
          if (hg.size() != 2)
            return false;
          zPre = u.add(zPre, hg[0], s + "z_pre");
          rPre = u.add(rPre, hg[1], s + "r_pre");
        }
        Value *z = u.activate(act[0], zPre, s + "z");
        // From the zero state without linear_before_reset, r only gates zeros.
        Value *reset = linearBeforeReset || h ? u.activate(act[0], rPre, s + "r") : nullptr;
        Value *hPre = g[2];
        if (linearBeforeReset) {
          Value *hh = h ? u.add(u.op("matmul", {h, resetRecurrent}, s + "hh"), resetBias,
                                s + "hhb")
                        : resetBias;
          hPre = u.add(hPre, u.mul(reset, hh, s + "rhh"), s + "h_pre");
        } else if (h) {
          hPre = u.add(hPre, u.op("matmul", {u.mul(reset, h, s + "rh"), resetRecurrent},
                                  s + "rhr"),
                       s + "h_pre");
        }
        Value *candidate = u.activate(act[1], hPre, s + "hc");
        Value *next = u.mul(u.op("subtract", {u.one(s), z}, s + "zc"), candidate, s + "zh");
        h = h ? u.add(next, u.mul(z, h, s + "zs"), s + "h") : next;
      }
      if (!h)
        return false;
      states[size_t(t)] = h;
    }
    if (c.hasOutput(0)) {
      std::vector<Value *> rows;
      for (Value *state : states) {
        Attrs axis;
        axis.set("axis", Attr::makeInt(0));
        rows.push_back(u.op("expand_dims", {state}, dir + "row", axis));
      }
      Attrs axis;
      axis.set("axis", Attr::makeInt(0));
      Value *sequence = u.op("concat", rows, dir + "y", axis);
      Attrs at1;
      at1.set("axis", Attr::makeInt(1));
      sequences.push_back(u.op("expand_dims", {sequence}, dir + "y4", at1));
    }
    Attrs axis0;
    axis0.set("axis", Attr::makeInt(0));
    lastH.push_back(u.op("expand_dims", {h}, dir + "yh", axis0));
    if (Kind == Cell::LSTM)
      lastC.push_back(u.op("expand_dims", {cell}, dir + "yc", axis0));
  }

  // Step 4: the outputs, in the layout asked.
  auto finish = [&](std::vector<Value *> parts, int64_t axis, std::vector<int64_t> layout1,
                    size_t output, const std::string &what) -> bool {
    if (!c.hasOutput(output))
      return true;
    Attrs at;
    at.set("axis", Attr::makeInt(axis));
    Value *v = parts.size() == 1 ? parts[0] : u.op("concat", parts, what + "_dirs", at);
    if (v && layout == 1) {
      Attrs axes;
      axes.set("axes", makeIntList(layout1));
      v = c.emit("permute_dims", {Operand::of(v)}, axes, c.node.output(int(output)));
    }
    if (!v)
      return false;
    c.define(output, v);
    return true;
  };
  return finish(sequences, 1, {2, 0, 1, 3}, 0, "y") && finish(lastH, 0, {1, 0, 2}, 1, "y_h") &&
         (Kind != Cell::LSTM || finish(lastC, 0, {1, 0, 2}, 2, "y_c"));
}

void onnximport::registerRecurrentOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"RNN", convertRecurrent<Cell::RNN>},
      {"GRU", convertRecurrent<Cell::GRU>},
      {"LSTM", convertRecurrent<Cell::LSTM>},
  });
}

// repr(tensor) as PyTorch 1.13 prints it: a port of torch/_tensor_str.py for dense CPU tensors
// without autograd, in the same order. Each function names the Python function it mirrors.
#include "io/print.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"

namespace attn {

namespace {

// self[i][j]...: a sub-tensor of `array` after indexing away its first `dim` dimensions.
struct View {
  const Array& array;
  std::size_t dim = 0;     // leading dimensions indexed away
  std::size_t offset = 0;  // flat index of the first element

  std::size_t rank() const { return array.rank() - dim; }
  std::size_t size0() const { return array.shape[dim]; }  // self.size(0)
  View operator[](std::size_t i) const {
    std::size_t stride = 1;
    for (std::size_t d = dim + 1; d < array.rank(); ++d) {
      stride *= array.shape[d];
    }
    return View{array, dim + 1, offset + i * stride};
  }
};

// Where the last `edgeitems` of a dimension start: self[-edgeitems:], which is all of self when
// edgeitems is 0 (Python reads -0 as 0).
std::size_t tail_start(std::size_t size, std::size_t edgeitems) {
  return edgeitems == 0 ? 0 : size - edgeitems;
}

// float.__format__ with "{:.{p}f}" or "{:.{p}e}". fmt rounds the exact double correctly (half to
// even on exact ties), as Python does; Python spells nan without its sign bit.
std::string python_float(double value, char type, int precision) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  return type == 'e' ? fmt::format("{:.{}e}", value, precision)
                     : fmt::format("{:.{}f}", value, precision);
}

// str(value) of one element of an integer or bool tensor.
std::string python_str(const Array& array, std::size_t i) {
  if (array.dtype == Dtype::boolean) return array.integer(i) != 0 ? "True" : "False";
  return fmt::format("{}", array.integer(i));
}

// class _Formatter: one width and one notation for every element, chosen from `indices` (the
// elements get_summarized_data keeps).
class Formatter {
 public:
  Formatter(const Array& array, const std::vector<std::size_t>& indices,
            const PrintOptions& options)
      : floating_dtype_(is_floating(array.dtype)), precision_(options.precision) {
    if (!floating_dtype_) {
      for (std::size_t i : indices) {
        max_width_ = std::max(max_width_, python_str(array, i).size());
      }
      return;  // (torch also copies options.sci_mode here, which integers never use)
    }

    std::vector<double> nonzero_finite_vals;
    for (std::size_t i : indices) {
      const double value = array.real(i);
      if (std::isfinite(value) && value != 0) nonzero_finite_vals.push_back(value);
    }
    // no valid number: keep int_mode, width 1, and (torch returns early) ignore options.sci_mode
    if (nonzero_finite_vals.empty()) return;

    // torch converts |values| to double before min, max and the ratio: float32 0.0001f is below
    // the double 1e-4, so it selects sci mode.
    double nonzero_finite_min = std::abs(nonzero_finite_vals[0]);
    double nonzero_finite_max = nonzero_finite_min;
    for (double value : nonzero_finite_vals) {
      nonzero_finite_min = std::min(nonzero_finite_min, std::abs(value));
      nonzero_finite_max = std::max(nonzero_finite_max, std::abs(value));
    }

    for (double value : nonzero_finite_vals) {
      if (value != std::ceil(value)) {
        int_mode_ = false;
        break;
      }
    }

    if (int_mode_) {
      // all integers: "{:.0f}" plus a "." that says the dtype is floating
      if (nonzero_finite_max / nonzero_finite_min > 1000.0 || nonzero_finite_max > 1.0e8) {
        sci_mode_ = true;
        widen(nonzero_finite_vals, 'e', precision_, 0);
      } else {
        widen(nonzero_finite_vals, 'f', 0, 1);
      }
    } else {
      if (nonzero_finite_max / nonzero_finite_min > 1000.0 || nonzero_finite_max > 1.0e8 ||
          nonzero_finite_min < 1.0e-4) {
        sci_mode_ = true;
        widen(nonzero_finite_vals, 'e', precision_, 0);
      } else {
        widen(nonzero_finite_vals, 'f', precision_, 0);
      }
    }

    // a forced sci_mode changes the notation but keeps the width computed above
    if (options.sci_mode) sci_mode_ = *options.sci_mode;
  }

  std::size_t width() const { return max_width_; }

  // _Formatter.format: the element right-aligned to width().
  std::string format(const Array& array, std::size_t i) const {
    std::string ret;
    if (floating_dtype_) {
      const double value = array.real(i);
      if (sci_mode_) {
        ret = python_float(value, 'e', precision_);
      } else if (int_mode_) {
        ret = python_float(value, 'f', 0);
        if (std::isfinite(value)) ret += ".";
      } else {
        ret = python_float(value, 'f', precision_);
      }
    } else {
      ret = python_str(array, i);
    }
    if (ret.size() < max_width_) ret.insert(0, max_width_ - ret.size(), ' ');
    return ret;
  }

 private:
  void widen(const std::vector<double>& values, char type, int precision, std::size_t extra) {
    for (double value : values) {
      max_width_ = std::max(max_width_, python_float(value, type, precision).size() + extra);
    }
  }

  bool floating_dtype_;
  int precision_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  std::size_t max_width_ = 1;
};

// _scalar_str: a 0-d tensor.
std::string scalar_str(const View& self, const Formatter& formatter) {
  return formatter.format(self.array, self.offset);
}

// _vector_str: a 1-d tensor, wrapped at linewidth, with " ..." between the edges when summarised.
std::string vector_str(const View& self, std::size_t indent, bool summarize,
                       const Formatter& formatter, const PrintOptions& options) {
  // length includes spaces and comma between elements
  const std::size_t element_length = formatter.width() + 2;
  // max(1, floor((linewidth - indent) / element_length)), with a negative difference giving 1
  const std::size_t elements_per_line =
      options.linewidth > indent
          ? std::max<std::size_t>(1, (options.linewidth - indent) / element_length)
          : 1;

  const std::size_t n = self.size0();
  const std::size_t edgeitems = options.edgeitems;
  std::vector<std::string> data;
  if (summarize && n > 2 * edgeitems) {
    for (std::size_t i = 0; i < edgeitems; ++i) {
      data.push_back(scalar_str(self[i], formatter));
    }
    data.push_back(" ...");
    for (std::size_t i = tail_start(n, edgeitems); i < n; ++i) {
      data.push_back(scalar_str(self[i], formatter));
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      data.push_back(scalar_str(self[i], formatter));
    }
  }

  std::vector<std::string> lines;
  for (std::size_t i = 0; i < data.size(); i += elements_per_line) {
    const auto first = data.begin() + static_cast<std::ptrdiff_t>(i);
    const auto last =
        data.begin() + static_cast<std::ptrdiff_t>(std::min(data.size(), i + elements_per_line));
    lines.push_back(fmt::format("{}", fmt::join(first, last, ", ")));
  }
  std::string separator = ",\n";
  separator.append(indent + 1, ' ');
  return fmt::format("[{}]", fmt::join(lines, separator));
}

// _tensor_str_with_formatter: slices of an n-d tensor, separated by dim-1 newlines, with "..."
// for the summarised middle.
std::string tensor_str_with_formatter(const View& self, std::size_t indent, bool summarize,
                                      const Formatter& formatter, const PrintOptions& options) {
  const std::size_t dim = self.rank();
  if (dim == 0) return scalar_str(self, formatter);
  if (dim == 1) return vector_str(self, indent, summarize, formatter, options);

  const std::size_t n = self.size0();
  const std::size_t edgeitems = options.edgeitems;
  std::vector<std::string> slices;
  auto add_slice = [&](std::size_t i) {
    slices.push_back(tensor_str_with_formatter(self[i], indent + 1, summarize, formatter, options));
  };
  if (summarize && n > 2 * edgeitems) {
    for (std::size_t i = 0; i < edgeitems; ++i) {
      add_slice(i);
    }
    slices.push_back("...");
    // range(len(self) - edgeitems, len(self))
    for (std::size_t i = n - edgeitems; i < n; ++i) {
      add_slice(i);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      add_slice(i);
    }
  }

  std::string separator = ",";
  separator.append(dim - 1, '\n').append(indent + 1, ' ');
  return fmt::format("[{}]", fmt::join(slices, separator));
}

// get_summarized_data: the flat indices of the elements the formatter looks at, the first and
// last edgeitems of every dimension longer than 2 * edgeitems.
void get_summarized_data(const View& self, const PrintOptions& options,
                         std::vector<std::size_t>& out) {
  const std::size_t dim = self.rank();
  if (dim == 0) {
    out.push_back(self.offset);
    return;
  }
  const std::size_t n = self.size0();
  const std::size_t edgeitems = options.edgeitems;
  if (dim == 1) {
    if (n > 2 * edgeitems) {
      for (std::size_t i = 0; i < edgeitems; ++i) {
        out.push_back(self[i].offset);
      }
      for (std::size_t i = tail_start(n, edgeitems); i < n; ++i) {
        out.push_back(self[i].offset);
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        out.push_back(self[i].offset);
      }
    }
    return;
  }
  if (n > 2 * edgeitems) {
    if (edgeitems == 0) {
      throw Error(ErrorKind::bad_value, "format_torch",
                  "edgeitems=0 cannot summarise a tensor of rank 2 or more (torch: \"stack "
                  "expects a non-empty TensorList\")");
    }
    for (std::size_t i = 0; i < edgeitems; ++i) {
      get_summarized_data(self[i], options, out);
    }
    for (std::size_t i = n - edgeitems; i < n; ++i) {
      get_summarized_data(self[i], options, out);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      get_summarized_data(self[i], options, out);
    }
  }
}

// _tensor_str: the bracketed contents of a non-empty tensor.
std::string tensor_str(const Array& array, std::size_t indent, const PrintOptions& options) {
  const std::size_t numel = array.size();
  if (numel == 0) return "[]";

  const bool summarize = numel > options.threshold;
  const View self{array};
  std::vector<std::size_t> indices;
  if (summarize) {
    get_summarized_data(self, options, indices);
  } else {
    indices.resize(numel);
    for (std::size_t i = 0; i < numel; ++i) {
      indices[i] = i;
    }
  }
  const Formatter formatter(array, indices, options);
  return tensor_str_with_formatter(self, indent, summarize, formatter, options);
}

// _add_suffixes: ", dtype=..." on the last line, or on a new line when it would pass linewidth.
std::string add_suffixes(const std::string& tensor_str, const std::vector<std::string>& suffixes,
                         std::size_t indent, const PrintOptions& options) {
  std::string out = tensor_str;
  // torch's len(s) - s.rfind("\n") + 1 counts two more than the last line's length
  const std::size_t newline = tensor_str.rfind('\n');
  std::size_t last_line_len =
      newline == std::string::npos ? tensor_str.size() + 2 : tensor_str.size() - newline + 1;
  for (const std::string& suffix : suffixes) {
    if (last_line_len + suffix.size() + 2 > options.linewidth) {
      out += ",\n";
      out.append(indent, ' ');
      out += suffix;
      last_line_len = indent + suffix.size();
    } else {
      out += ", ";
      out += suffix;
      last_line_len += suffix.size() + 2;
    }
  }
  out += ")";
  return out;
}

// str(tensor.dtype)
std::string torch_dtype_name(Dtype dtype) {
  return "torch." + std::string(dtype_name(dtype));
}

}  // namespace

// _str_intern: "tensor(" + contents + suffixes + ")".
std::string format_torch(const Array& array, const PrintOptions& options) {
  if (options.precision < 0) {
    throw Error(ErrorKind::bad_value, "format_torch",
                fmt::format("precision must be 0 or more, got {}", options.precision));
  }
  const std::size_t numel = array.size();
  if (array.bytes.size() != numel * dtype_size(array.dtype)) {
    throw Error(ErrorKind::bad_size, "format_torch",
                fmt::format("a {} array of shape {} needs {} bytes, got {}",
                            dtype_name(array.dtype), shape_string(array.shape),
                            numel * dtype_size(array.dtype), array.bytes.size()));
  }

  const std::string prefix = "tensor(";
  const std::size_t indent = prefix.size();
  std::vector<std::string> suffixes;
  std::string contents;
  if (numel == 0) {
    // explicitly print the shape if it is not (0,), and the dtype even when it is int64 or bool
    if (array.rank() != 1) suffixes.push_back(fmt::format("size={}", shape_string(array.shape)));
    if (array.dtype != Dtype::float32)
      suffixes.push_back(fmt::format("dtype={}", torch_dtype_name(array.dtype)));
    contents = "[]";
  } else {
    const bool has_default_dtype = array.dtype == Dtype::float32 || array.dtype == Dtype::int64 ||
                                   array.dtype == Dtype::boolean;
    if (!has_default_dtype)
      suffixes.push_back(fmt::format("dtype={}", torch_dtype_name(array.dtype)));
    contents = tensor_str(array, indent, options);
  }
  return add_suffixes(prefix + contents, suffixes, indent, options);
}

}  // namespace attn

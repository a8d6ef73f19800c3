// The golden comparison itself (tests/support/tolerant_text.hpp): which printed differences are
// round-off and which are not.
#include <catch2/catch.hpp>

#include "tolerant_text.hpp"

using attn::testing::compare_text;
using attn::testing::find_printed;

TEST_CASE("a number one unit off in its last printed digit is round-off", "[tolerant_text]") {
  CHECK(compare_text("tensor([[-0.0351,  0.5000]])\n", "tensor([[-0.0352,  0.5000]])\n").equal);
  CHECK(compare_text("9.2521e-01\n", "9.2522e-01\n").equal);
  CHECK_FALSE(
      compare_text("tensor([[-0.0350,  0.5000]])\n", "tensor([[-0.0352,  0.5000]])\n").equal);
  CHECK_FALSE(compare_text("9.2422e-01\n", "9.2522e-01\n").equal);
}

TEST_CASE("numbers within atol + rtol * |expected| are equal, whatever their digits",
          "[tolerant_text]") {
  CHECK(compare_text("max |sum - 1| = 1.19e-07\n", "max |sum - 1| = 5.96e-08\n").equal);
  CHECK(compare_text("max |sum - 1| = 0\n", "max |sum - 1| = 5.96e-08\n").equal);
  CHECK(compare_text("1.0000123\n", "1.0000\n").equal);
  CHECK_FALSE(compare_text("max |sum - 1| = 2e-05\n", "max |sum - 1| = 5.96e-08\n").equal);
}

TEST_CASE("whole numbers (sizes, counts, indices) must be spelt the same", "[tolerant_text]") {
  CHECK_FALSE(compare_text("shape (1, 4, 3)\n", "shape (1, 3, 3)\n").equal);
  CHECK_FALSE(compare_text("Parameters: 1,159\n", "Parameters: 1,158\n").equal);
  CHECK_FALSE(compare_text("[2/4] weights\n", "[3/4] weights\n").equal);
  // a digit inside a word is part of the word
  CHECK_FALSE(compare_text("x1 x2\n", "x0 x2\n").equal);
  CHECK(compare_text("├─Linear: 1-1\n", "├─Linear: 1-1\n").equal);
}

TEST_CASE("words must match, the amount of space between them need not", "[tolerant_text]") {
  CHECK(compare_text("tensor([[ 1.0000, -0.5000]])\n", "tensor([[1.0000, -0.5000]])\n").equal);
  CHECK_FALSE(compare_text("✗ FAILED every row sums to 1\n", "✓ every row sums to 1\n").equal);
  CHECK_FALSE(compare_text("a b\n", "a  c\n").equal);
  CHECK_FALSE(compare_text("nan\n", "0.5\n").equal);
  CHECK(compare_text("inf nan -inf\n", "inf nan -inf\n").equal);
}

TEST_CASE("missing and extra lines are differences, reported by line", "[tolerant_text]") {
  const auto missing = compare_text("a\nb\n", "a\nb\nc\n");
  CHECK_FALSE(missing.equal);
  CHECK(missing.diff.find("line 3: missing") != std::string::npos);
  CHECK(missing.diff.find("2 lines printed, 3 expected") != std::string::npos);
  const auto changed = compare_text("x = 0.5\ny = 0.7\n", "x = 0.5\ny = 0.2\n");
  CHECK(changed.diff.find("line 2: the number 0.7 where 0.2 was expected") != std::string::npos);
  CHECK(changed.diff.find("expected: y = 0.2") != std::string::npos);
  CHECK(changed.diff.find("printed:  y = 0.7") != std::string::npos);
}

TEST_CASE("a torch repr is found inside a whole output, under the tolerance", "[tolerant_text]") {
  const std::string out =
      "[1/2] input, shape (1, 2):\ntensor([[0.1000, 0.2000]])\n\n[2/2] output, shape (1, 2):\n"
      "tensor([[0.3001, 0.4000]])\n\nParameters: 0\n";
  CHECK(find_printed(out, "tensor([[0.3000, 0.4000]])\n").equal);
  CHECK(find_printed(out, "tensor([[0.1000, 0.2000]])").equal);
  const auto missing = find_printed(out, "tensor([[0.3500, 0.4000]])\n");
  CHECK_FALSE(missing.equal);
  CHECK(missing.diff.find("the number 0.3001 where 0.3500 was expected") != std::string::npos);
}

TEST_CASE("with line breaks read as spaces, a line may wrap at another word", "[tolerant_text]") {
  const std::string one = "  ✓ book = fused: max |d| = 0 (round-off\n    allows 2.2e-07)\n";
  const std::string two = "  ✓ book = fused: max |d| = 7.45e-08\n    (round-off allows 1.7e-07)\n";
  const attn::testing::TextTolerance spaces{.line_breaks_as_spaces = true};
  CHECK_FALSE(compare_text(two, one).equal);  // line by line, the breaks differ
  CHECK(compare_text(two, one, spaces).equal);
  const auto worded = compare_text("max |d| = 0\n(round-off grants 1e-07)\n",
                                   "max |d| = 0 (round-off\nallows 1e-07)\n", spaces);
  CHECK_FALSE(worded.equal);  // the words still count
  CHECK(worded.diff.find("'grants' where 'allows' was expected") != std::string::npos);
  CHECK_FALSE(compare_text("x = 0.5 y = 0.7", "x = 0.5\ny = 0.2", spaces).equal);
}

"""Eight float64 lanes as one value, for the chain kernels' inner products.

The loop vectorizer cannot tell that the rows a kernel reads and the rows it writes do
not overlap (numba arrays carry no such promise), so over a row of 24 columns it emits a
runtime overlap test before every short vectorized loop, or gives up on loops with many
memory streams. :class:`Float64x8` is an LLVM ``<8 x double>``: the intrinsics below load,
store, broadcast and multiply-add whole vectors, so a kernel can keep sums in registers
across a loop and the compiler has nothing to prove. On a core with 512-bit vectors each
operation is one instruction; with 256-bit vectors, two.

Every operation is exactly the scalar one lane by lane (``fma8`` rounds once, as the
multiply-add the compiler fuses under ``fastmath={"contract"}``), so a kernel written
with them gives the same bits as its scalar loops.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.datamodel import models, register_default
from numba.extending import intrinsic

__all__ = ["LANES", "add8", "float64x8", "fma8", "load8", "mul8", "select_greater8", "splat8",
           "store8", "store8_int32"]

#: Lanes of a :class:`Float64x8`.
LANES = 8

_VECTOR = ir.VectorType(ir.DoubleType(), LANES)


class Float64x8(types.Type):
    """The numba type of eight float64 lanes (an LLVM ``<8 x double>``)."""

    def __init__(self):
        super().__init__(name="Float64x8")


float64x8 = Float64x8()


@register_default(Float64x8)
class _Float64x8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VECTOR)


def _float_array(array):
    return (isinstance(array, types.Array) and array.dtype == types.float64
            and array.layout == "C")


def _pointer(context, builder, signature, args):
    array = context.make_array(signature.args[0])(context, builder, args[0])
    index = context.cast(builder, args[1], signature.args[1], types.intp)
    element = builder.gep(array.data, [index])
    return builder.bitcast(element, _VECTOR.as_pointer())


@intrinsic
def load8(typingctx, array, index):
    """The eight entries ``array.flat[index:index + 8]`` of a C-contiguous float64 array
    (no bounds check)."""
    if not (_float_array(array) and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        return builder.load(_pointer(context, builder, signature, args), align=8)
    return float64x8(array, index), codegen


@intrinsic
def store8(typingctx, array, index, value):
    """``array.flat[index:index + 8] = value`` (no bounds check)."""
    if not (_float_array(array) and isinstance(index, types.Integer)
            and value == float64x8):
        return None

    def codegen(context, builder, signature, args):
        builder.store(args[2], _pointer(context, builder, signature, args), align=8)
        return context.get_dummy_value()
    return types.none(array, index, value), codegen


@intrinsic
def splat8(typingctx, x):
    """Eight copies of the float ``x``."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.float64)
        single = builder.insert_element(ir.Constant(_VECTOR, ir.Undefined), value,
                                        ir.Constant(ir.IntType(32), 0))
        mask = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
        return builder.shuffle_vector(single, ir.Constant(_VECTOR, ir.Undefined), mask)
    return float64x8(x), codegen


@intrinsic
def mul8(typingctx, a, b):
    """Lane by lane ``a * b``."""
    if not (a == float64x8 and b == float64x8):
        return None

    def codegen(context, builder, signature, args):
        return builder.fmul(args[0], args[1])
    return float64x8(a, b), codegen


@intrinsic
def fma8(typingctx, a, b, c):
    """Lane by lane ``a * b + c``, rounded once."""
    if not (a == float64x8 and b == float64x8 and c == float64x8):
        return None

    def codegen(context, builder, signature, args):
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_VECTOR, [_VECTOR] * 3), "llvm.fma.v8f64")
        return builder.call(function, args)
    return float64x8(a, b, c), codegen


@intrinsic
def add8(typingctx, a, b):
    """Lane by lane ``a + b``."""
    if not (a == float64x8 and b == float64x8):
        return None

    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1])
    return float64x8(a, b), codegen


@intrinsic
def select_greater8(typingctx, x, y, a, b):
    """Lane by lane ``a if x > y else b`` (false where either of x, y is NaN)."""
    if not all(v == float64x8 for v in (x, y, a, b)):
        return None

    def codegen(context, builder, signature, args):
        greater = builder.fcmp_ordered(">", args[0], args[1])
        return builder.select(greater, args[2], args[3])
    return float64x8(x, y, a, b), codegen


@intrinsic
def store8_int32(typingctx, array, index, value):
    """``array.flat[index:index + 8] = value`` for an int32 array, each lane of ``value``
    (a whole number within the int32 range) converted (no bounds check)."""
    if not (isinstance(array, types.Array) and array.dtype == types.int32
            and array.layout == "C" and isinstance(index, types.Integer)
            and value == float64x8):
        return None

    def codegen(context, builder, signature, args):
        ints = ir.VectorType(ir.IntType(32), LANES)
        data = context.make_array(signature.args[0])(context, builder, args[0])
        position = context.cast(builder, args[1], signature.args[1], types.intp)
        pointer = builder.bitcast(builder.gep(data.data, [position]), ints.as_pointer())
        builder.store(builder.fptosi(args[2], ints), pointer, align=4)
        return context.get_dummy_value()
    return types.none(array, index, value), codegen

"""CmpKeep(x) -> y: keeps the borrowed objects of each compile in the instance
and, in the next compile, checks that every one of them expired: touching one
must raise RuntimeError "Borrowed native object has expired" (the compile
raises AssertionError naming the object otherwise). The number of compile
calls this instance saw is written by execute as y = x + calls."""
from ge.custom_op import get_compile_ctx, get_compile_platform_info, get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

EXPIRED = "Borrowed native object has expired"


@register_op(op_type="CmpKeep")
def cmp_keep(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="CmpKeep")
class CmpKeep:
    def __init__(self):
        self.kept = None
        self.calls = 0
        self.checked = 0

    def compile(self, x: Tensor, y: Tensor) -> None:
        self.calls += 1
        if self.kept is not None:
            for name, touch in self.kept.items():
                try:
                    touch()
                except RuntimeError as e:
                    if EXPIRED not in str(e):
                        raise AssertionError(f"kept {name}: unexpected RuntimeError {e}") from None
                else:
                    raise AssertionError(f"kept {name} from an earlier compile is still usable")
                self.checked += 1
        ctx, plat, shape, fmt = get_compile_ctx(), get_compile_platform_info(), x.storage_shape, x.format
        self.kept = {
            "input tensor": lambda: x.data_type, "output tensor": lambda: y.storage_shape,
            "shape view": lambda: shape.dims, "format view": lambda: fmt.origin_format,
            "compile ctx": lambda: ctx.get_option("any"), "platform info": lambda: plat.get_soc_version(),
        }

    def execute(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        src, dst = x.data.cast("B").cast("f"), y.data.cast("B").cast("f")
        for k in range(len(src)):
            dst[k] = src[k] + self.calls * 1000 + self.checked

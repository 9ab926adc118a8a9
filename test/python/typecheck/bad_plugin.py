"""A plugin full of type errors (test_stubs.py): each line ending in an error marker comment
(hash, "E:", a message fragment) must get a mypy error holding that fragment, and no other
line may get one."""
from typing import List

from ge.custom_op import (AnnotatedKernelLaunchInfo, get_compile_ctx, get_compile_platform_info,
                          get_declare_launch_args_ctx, get_execute_ctx, register_op, register_op_impl)
from ge.custom_op import OpImplDescriptor  # E: OpImplDescriptor
from ge.graph import DataType
from ge.runtime import Shape, Tensor, TensorDesc
from ge.testing import host_tensor, run_execute


@register_op(op_type=1)  # E: "register_op" has incompatible type "int"
def bad(x: TensorDesc, *, k: int = 0) -> TensorDesc:
    TensorDesc([2], "float32")  # E: "TensorDesc" has incompatible type "str"
    TensorDesc((2, 3), DataType.DT_FLOAT)  # E: "TensorDesc" has incompatible type "Tuple[int, int]"
    x.shape.storage_shape.dims = [1]  # E: Property "dims" defined in "Shape" is read-only
    x.shape.storage_shape.get_dim("0")  # E: "get_dim" of "Shape" has incompatible type "str"
    x.shape.storage_shape.get_dim(index=0)  # E: Unexpected keyword argument "index"
    return [x]  # E: Incompatible return value type


@register_op_impl(op_type="BadCustom")
class Bad:
    def execute(self, x: Tensor, *, k: int) -> None:
        ctx = get_execute_ctx()
        ctx.malloc_output_tensor("0", x.storage_shape.dims, x.data_type)  # E: No overload variant of "malloc_output_tensor" of "EagerOpExecutionContext" matches argument types "str"
        ctx.malloc_output_tensor(0, "2x3", x.data_type)  # E: No overload variant of "malloc_output_tensor" of "EagerOpExecutionContext" matches argument types "int", "str"
        ctx.get_optional_input_tensor(0).data  # E: Item "None" of "Optional[Tensor]" has no attribute "data"
        x.data_type = DataType.DT_FLOAT  # E: Property "data_type" defined in "Tensor" is read-only
        x.data = b""  # E: Property "data" defined in "Tensor" is read-only
        ctx.malloc_workspace("64")  # E: "malloc_workspace" of "EagerOpExecutionContext" has incompatible type "str"
        ctx.get_stream_id()  # E: "EagerOpExecutionContext" has no attribute "get_stream_id"
        Tensor()  # E: Too few arguments for "Tensor"
        Shape([1])  # E: "Shape" has incompatible type "List[int]"
        n: str = x.size  # E: Incompatible types in assignment
        x.data.cast("f")[0] = "a"  # E: No overload variant of "__setitem__"

    def compile(self, x: Tensor, y: Tensor, *, k: int) -> None:
        get_compile_ctx().get_option(1)  # E: "get_option" of "OpCompileContext" has incompatible type "int"
        n: int = get_compile_ctx().get_option("k")  # E: Incompatible types in assignment
        get_compile_platform_info().get_core_num(1)  # E: "get_core_num" of "CompilePlatformInfo" has incompatible type "int"
        get_compile_ctx().get_core_num()  # E: "OpCompileContext" has no attribute "get_core_num"

    def declare_launch_args(self, x: Tensor, y: Tensor, *, k: int) -> None:
        ctx = get_declare_launch_args_ctx()
        args = ctx.create_kernel_args()
        args.append_input("0", x)  # E: "append_input" of "AnnotatedKernelArgs" has incompatible type "str"
        args.append_workspace(64)  # E: "append_workspace" of "AnnotatedKernelArgs" has incompatible type "int"
        info = AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin="code", block_dim=1)  # E: "AnnotatedKernelLaunchInfo" has incompatible type "str"
        AnnotatedKernelLaunchInfo("k", b"x", 1)  # E: Too many positional arguments
        ctx.add_launch(args, info)  # E: "add_launch" of "AnnotatedArgsContext" has incompatible type "AnnotatedKernelArgs"


def tests() -> None:
    y: List[float] = run_execute("BadCustom", [host_tensor([1.0], DataType.DT_FLOAT)])  # E: Incompatible types in assignment
    run_execute("BadCustom", [[1.0]])  # E: List item 0 has incompatible type "float"

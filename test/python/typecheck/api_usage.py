"""Every public name of the plugin API used with correct types (mypy --strict must pass)."""
from typing import Any, Dict, List, Optional, Tuple

import ge.custom_op as custom_op
from ge.custom_op import (AnnotatedArgsContext, AnnotatedKernelArgs, AnnotatedKernelLaunchInfo, CompilePlatformInfo,
                          EagerOpExecutionContext, InferMetaContext, OpCompileContext, WorkspaceAddr,
                          clear_registered_op_impls, get_compile_ctx, get_compile_platform_info,
                          get_declare_launch_args_ctx, get_execute_ctx, get_registered_op_impl_by_descriptor_key,
                          get_registered_op_impl_dicts, get_registered_op_impls, register_op, register_op_impl)
from ge.custom_op.proto import (InputType, OpAttr, OpInput, OpOutput, OpProtoDescriptor, OutputType,
                                clear_registered_op_protos, get_registered_op_proto_by_descriptor_key,
                                get_registered_op_proto_by_op_type, get_registered_op_proto_dict_by_op_type,
                                get_registered_op_proto_dicts, get_registered_op_protos)
from ge.graph import DataType, Format
from ge.runtime import ExpandDimsType, Shape, StorageFormat, StorageShape, Tensor, TensorDesc, TensorPlacement
from ge.testing import HostTensor, host_tensor, run_compile, run_declare_launch_args, run_execute, run_infer_meta


@register_op(op_type="ProbeCustom", mutates_args=("x",))
def probe(x: TensorDesc, opt: Optional[TensorDesc], xs: List[TensorDesc], *, n: int = 1, f: float = 1.0,
          dt: DataType = DataType.DT_FLOAT, names: List[str] = ["a"]) -> Tuple[TensorDesc, List[TensorDesc]]:
    d = TensorDesc(x.shape.storage_shape.dims, x.data_type)
    d.data_type = DataType.DT_DOUBLE
    d2 = TensorDesc(StorageShape([2, 3], [2, 3]), DataType.DT_FLOAT)
    d3 = TensorDesc(None, DataType.DT_INT64)
    d3.shape = StorageShape([1], [1])  # settable (a list or None also works at run time)
    ss: StorageShape = d.shape
    ss.set_origin_shape([1, 2])
    ss.set_storage_shape((1, 2))
    origin: Shape = ss.origin_shape
    dims: List[int] = origin.dims
    count: int = origin.dim_num + origin.size + origin.get_dim(0) + len(origin)
    origin.set_dim(0, 4)
    origin.append_dim(5)
    scalar: bool = origin.is_scalar()
    origin.set_scalar()
    same: bool = origin == [4, 5] and d == d2 and ss == StorageShape()
    fmt: StorageFormat = d.format
    fmt.set_origin_format(Format.FORMAT_ND)
    fmt.set_storage_format(2)
    fmt.set_expand_dims_type(ExpandDimsType("101"))
    f1: Format = fmt.origin_format
    f2: Format = fmt.storage_format
    e: ExpandDimsType = fmt.expand_dims_type
    rule: str = e.rule
    mask: int = e.mask + e.rule_size
    exp: bool = e.is_expand_index(0) and ExpandDimsType(5) == ExpandDimsType()
    full: int = e.full_size
    e.set_expand_index(1)
    sf = StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_ND, ExpandDimsType("1"))
    s2: Shape = d3.origin_shape
    s3: Shape = d3.storage_shape
    return d, [d2, d3]


@register_op_impl(op_type="ProbeCustom")
class Probe:
    def execute(self, x: Tensor, opt: Optional[Tensor], xs: List[Tensor], *, n: int, f: float, dt: DataType,
                names: List[str]) -> None:
        ctx: EagerOpExecutionContext = get_execute_ctx()
        count: int = ctx.get_input_num() + ctx.get_output_num() + ctx.get_stream()
        t: Tensor = ctx.get_input_tensor(0)
        req: Tensor = ctx.get_required_input_tensor(0)
        maybe: Optional[Tensor] = ctx.get_optional_input_tensor(1)
        inst: Tensor = ctx.get_dynamic_input_tensor(2, 0)
        num: int = ctx.get_dynamic_input_num(2)
        y = ctx.malloc_output_tensor(0, x.storage_shape.dims, x.data_type)
        o: Tensor = ctx.get_output_tensor(0)
        ctx.malloc_output_tensor(4, StorageShape([2], [2]), StorageFormat(), DataType.DT_FLOAT)
        ctx.malloc_output_tensor(1, (2, 3), DataType.DT_FLOAT)
        ctx.malloc_output_tensor(2, x.shape, 0)
        ctx.malloc_output_tensor(3, x.storage_shape, dt)
        ref: Tensor = ctx.make_output_ref_input(0, 0)
        ws_addr: int = ctx.malloc_workspace(64)
        ws = ctx.malloc_workspace_buffer(64)
        ws.cast("f")[0] = 1.5
        ws[0:4] = b"\0\0\0\0"
        view = y.data.cast("B").cast("f")
        view[0] = 0.5
        view[1] = 2
        first: float = view[0]
        for v in view.tolist():
            view[0] = v * 2.0
        raw: bytes = bytes(x.data)
        mv: memoryview = x.data
        ints: int = x.addr + x.size + x.shape_size
        ai: Dict[str, Any] = x.__array_interface__
        shapes: Tuple[StorageShape, Shape, Shape] = (x.shape, x.storage_shape, x.origin_shape)
        fmts: Tuple[StorageFormat, Format, Format] = (x.format, x.storage_format, x.origin_format)
        e: ExpandDimsType = x.expand_dims_type
        p: TensorPlacement = x.placement
        on_host: bool = p == TensorPlacement.ON_HOST
        dtype: DataType = x.data_type

    def compile(self, x: Tensor, opt: Optional[Tensor], xs: List[Tensor], y: Tensor, ys: List[Tensor], *, n: int,
                f: float, dt: DataType, names: List[str]) -> None:
        ctx: OpCompileContext = get_compile_ctx()
        value: str = ctx.get_option("key")
        info: CompilePlatformInfo = get_compile_platform_info()
        res: str = info.get_platform_resource("SoCInfo", "ai_core_cnt")
        group: Dict[str, str] = info.get_platform_resource_group("SoCInfo")
        cores: int = info.get_core_num() + info.get_core_num("AiCore") + info.get_core_num(core_type=None)
        soc: str = info.get_soc_version()
        ai: int = info.get_ai_core_num()

    def declare_launch_args(self, x: Tensor, opt: Optional[Tensor], xs: List[Tensor], y: Tensor, ys: List[Tensor],
                            *, n: int, f: float, dt: DataType, names: List[str]) -> None:
        ctx: AnnotatedArgsContext = get_declare_launch_args_ctx()
        ws: WorkspaceAddr = ctx.malloc_workspace(128)
        sizes: int = ws.size + ws.index + ws.addr
        args: AnnotatedKernelArgs = ctx.create_kernel_args()
        args.append_input(0, x)
        args.append_input(1)
        args.append_output(0, tensor=y)
        args.append_workspace(ws)
        args.append_scalar(7)
        slots: int = len(args)
        info = AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin=b"\x7fELF", block_dim=2,
                                         stream_id=ctx.get_stream_id())
        name: str = info.kernel_name
        binary: bytes = info.kernel_bin
        dims: int = info.block_dim + info.stream_id
        ctx.add_launch(info, args)
        ctx.add_launch(launch_info=AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin=bytearray(b"x"), block_dim=1),
                       args=args)


def registry() -> None:
    for d in get_registered_op_impls():
        key: str = d.descriptor_key
        parts: Tuple[str, str, str] = (d.op_type, d.module_name, d.class_name)
        ifaces: Tuple[str, ...] = d.interfaces
        cls: type = d.cls
        plain: Dict[str, Any] = d.to_bridge_dict()
    found = get_registered_op_impl_by_descriptor_key("m:C:T")
    if found is not None:
        print(found.op_type)
    dicts: List[Dict[str, Any]] = get_registered_op_impl_dicts()
    clear_registered_op_impls()
    protos: List[OpProtoDescriptor] = get_registered_op_protos()
    pr = get_registered_op_proto_by_op_type("ProbeCustom")
    if pr is not None:
        ins: Tuple[OpInput, ...] = pr.inputs
        outs: Tuple[OpOutput, ...] = pr.outputs
        attrs: Tuple[OpAttr, ...] = pr.attrs
        texts: List[str] = [pr.descriptor_key, pr.op_type, pr.module_name, pr.func_name,
                            ins[0].name, outs[0].name, attrs[0].name, attrs[0].type]
        kinds: Tuple[InputType, OutputType] = (ins[0].kind, outs[0].kind)
        indexes: int = ins[0].index + outs[0].index + attrs[0].index
        req: bool = attrs[0].is_required
        default: Any = attrs[0].default
        infer: Any = pr.infer_func
        bridge: Dict[str, Any] = pr.to_bridge_dict()
        again: Optional[OpProtoDescriptor] = get_registered_op_proto_by_descriptor_key(pr.descriptor_key)
        made = OpProtoDescriptor(pr.descriptor_key, pr.op_type, pr.module_name, pr.func_name,
                                 [OpInput("x", 0, InputType.REQUIRED)], [OpAttr("n", 0, "VT_INT", False, 1)],
                                 [OpOutput("y", 0, OutputType.DYNAMIC)], probe)
    pd: Optional[Dict[str, Any]] = get_registered_op_proto_dict_by_op_type("ProbeCustom")
    pds: List[Dict[str, Any]] = get_registered_op_proto_dicts()
    clear_registered_op_protos()
    sub: Any = custom_op.proto.get_registered_op_protos


def testing() -> None:
    x = host_tensor([1.0, 2.0], DataType.DT_FLOAT)
    x2 = host_tensor(range(6), DataType.DT_INT32, shape=[2, 3])
    raw = HostTensor(b"\0" * 8, [2], DataType.DT_FLOAT)
    outs: List[HostTensor] = run_execute("ProbeCustom", [x, None, [x2, raw]], {"n": 2})
    values: List[Any] = outs[0].tolist()
    meta: List[int] = outs[0].shape
    blob: bytes = outs[0].data
    dtype: DataType = outs[0].data_type
    descs: List[TensorDesc] = run_infer_meta("ProbeCustom", [TensorDesc([2], DataType.DT_FLOAT), None, []])
    inst: Any = run_compile("ProbeCustom", [descs[0], None, [descs[0]]], options={"k": "v"}, soc="Ascend910B1")
    plan: Dict[str, Any] = run_declare_launch_args("ProbeCustom", [descs[0], None, []], instance=inst, stream_id=0)
    run_execute("ProbeCustom", [x, None, []], instance=inst)

# Type stubs of ge.custom_op.base: GE 9.2.0-beta.x's base classes, the same
# objects as ge.custom_op's (share/docs/plugin-authors.md, "Plugins from
# earlier GE releases").
from . import BaseCustomOp as BaseCustomOp
from . import EagerExecuteOp as EagerExecuteOp
from . import EagerOpExecutionContext as EagerOpExecutionContext

__all__ = ["BaseCustomOp", "EagerExecuteOp", "EagerOpExecutionContext"]

"""Neural-network layers with torch's names, signatures, parameter names and init."""

from . import functional, init
from .modules import *  # noqa: F403
from .modules import (
    Identity,
    Module,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from .parameter import Buffer, Parameter, UninitializedParameter

"""Layer modules. Each file holds one family (linear, activation, normalization, ...)."""

from .container import Identity, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module

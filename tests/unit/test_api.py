import importlib.resources
import types

import mqusers


def test_public_api_is_exactly_all() -> None:
    # Submodules become attributes once imported; they are not the public API.
    names = {n for n, v in vars(mqusers).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert names - {"annotations"} == set(mqusers.__all__) - {"__version__"}


def test_typed_marker_ships() -> None:
    assert importlib.resources.files("mqusers").joinpath("py.typed").is_file()

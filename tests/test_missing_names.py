"""A PyTorch name tinyattn lacks raises an AttributeError that says so and points to `tinyattn coverage
NAME` and the documentation's coverage page; the command says whether tinyattn has a name, and why not."""

import copy
import pickle

import pytest

import tinyattn
import tinyattn.nn.functional as F
from tinyattn import missing, nn, optim
from tinyattn.app import coverage as coverage_command

NAMESPACES = [
    (tinyattn, "torch"),
    (nn, "torch.nn"),
    (F, "torch.nn.functional"),
    (nn.init, "torch.nn.init"),
    (optim, "torch.optim"),
    (optim.lr_scheduler, "torch.optim.lr_scheduler"),
    (tinyattn.utils.data, "torch.utils.data"),
    (tinyattn.linalg, "torch.linalg"),
    (tinyattn.distributions, "torch.distributions"),
]


def names_tinyattn_lacks(module, torch_namespace):
    prefix = torch_namespace + "."
    return sorted(name[len(prefix):] for name in missing.pytorch_names()
                  if name.startswith(prefix) and "." not in name[len(prefix):]
                  and not hasattr(module, name[len(prefix):]))


@pytest.mark.parametrize("module, torch_namespace", NAMESPACES, ids=[ns for _, ns in NAMESPACES])
def test_a_pytorch_name_tinyattn_lacks_says_so(module, torch_namespace):
    lacking = names_tinyattn_lacks(module, torch_namespace)
    assert lacking, f"tinyattn has every name of {torch_namespace}: pick another namespace to test"
    for name in lacking[:25]:
        with pytest.raises(AttributeError) as caught:
            getattr(module, name)
        message = str(caught.value)
        if missing.left_out_reason(f"{torch_namespace}.{name}"):
            assert f"tinyattn leaves {torch_namespace}.{name} out on purpose (" in message
        else:
            assert f"tinyattn does not implement {torch_namespace}.{name} (yet)" in message
        assert f"`tinyattn coverage {torch_namespace}.{name}`" in message
        assert "coverage page of tinyattn's documentation" in message and "docs/" not in message
        assert caught.value.name == name
        assert not hasattr(module, name)
        assert getattr(module, name, "default") == "default"


@pytest.mark.parametrize("module, torch_namespace", NAMESPACES, ids=[ns for _, ns in NAMESPACES])
def test_any_other_name_gets_pythons_usual_message(module, torch_namespace):
    with pytest.raises(AttributeError, match=rf"module '{module.__name__}' has no attribute 'no_such_name'"):
        module.no_such_name
    with pytest.raises(AttributeError, match="has no attribute '__no_such_dunder__'"):
        module.__no_such_dunder__


@pytest.mark.parametrize("name", ["replayed", "ReplayError"])
def test_a_withdrawn_name_says_why_and_what_to_write_instead(name):
    with pytest.raises(AttributeError, match=rf"tinyattn\.{name} was withdrawn.*without a warning") as caught:
        getattr(tinyattn, name)
    assert "learner loops page" in str(caught.value) and caught.value.name == name
    assert not hasattr(tinyattn, name)


def test_the_names_tinyattn_has_are_found_as_before():
    assert tinyattn.tanh is tinyattn.functions.tanh
    assert nn.Linear.__name__ == "Linear" and F.softmax.__name__ == "softmax"
    assert optim.AdamW.__name__ == "AdamW"


def test_a_tensor_method_tinyattn_lacks_says_so():
    t = tinyattn.ones(2)
    name = next(n for n in ["index_fill_", "ormqr", "q_scale", "to_mkldnn", "geqrf"] if not hasattr(type(t), n))
    with pytest.raises(AttributeError, match=rf"tinyattn does not implement torch.Tensor.{name} \(yet\); run "
                                             rf"`tinyattn coverage torch.Tensor.{name}`"):
        getattr(t, name)
    assert not hasattr(t, name)
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute 'no_such_method'"):
        t.no_such_method
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute '_private'"):
        t._private


def test_a_parameter_says_its_own_class_name():
    p = nn.Parameter(tinyattn.ones(2))
    with pytest.raises(AttributeError, match="'Parameter' object has no attribute 'no_such_method'"):
        p.no_such_method


def test_copy_and_pickle_still_work():
    t = tinyattn.arange(3.0).requires_grad_()
    assert copy.copy(t).tolist() == [0.0, 1.0, 2.0]
    assert copy.deepcopy(t).tolist() == [0.0, 1.0, 2.0]
    back = pickle.loads(pickle.dumps(t))
    assert back.tolist() == [0.0, 1.0, 2.0] and back.requires_grad
    layer = nn.Linear(2, 3)
    assert copy.deepcopy(layer).weight.shape == (3, 2)


def test_from_import_of_a_missing_name_is_an_import_error():
    with pytest.raises(ImportError):
        from tinyattn.nn import NoSuchLayer  # noqa: F401


def test_every_name_in_the_list_is_pytorchs_spelling():
    names = missing.pytorch_names()
    assert "torch.nn.Linear" in names and "torch.Tensor.view" in names and "torch.optim.AdamW" in names
    assert all(name.startswith("torch.") for name in names)


def test_the_list_matches_pytorch(torch):
    """The committed list is PyTorch's (rewrite it with tools/make_torch_names.py after an upgrade)."""
    names = missing.pytorch_names()
    for namespace, module in [("torch.nn", torch.nn), ("torch.optim", torch.optim),
                              ("torch.nn.functional", torch.nn.functional)]:
        public = {f"{namespace}.{n}" for n in dir(module) if not n.startswith("_")}
        assert public <= names, sorted(public - names)[:10]
    assert {f"torch.Tensor.{n}" for n in dir(torch.Tensor) if not n.startswith("_")} <= names


def test_a_name_left_out_on_purpose_says_why():
    with pytest.raises(AttributeError, match=r"tinyattn leaves torch.jit out on purpose \(TorchScript compiler\)"):
        tinyattn.jit
    with pytest.raises(AttributeError, match=r"leaves torch.hub out on purpose \(downloads of pretrained models\)"):
        tinyattn.hub


def test_the_distributions_namespace_says_what_it_lacks():
    lacking = names_tinyattn_lacks(tinyattn.distributions, "torch.distributions")
    name = next(n for n in ["Dirichlet", "Gumbel", "VonMises", "Weibull"] if n in lacking)
    with pytest.raises(AttributeError, match=rf"tinyattn does not implement torch.distributions.{name} \(yet\)"):
        getattr(tinyattn.distributions, name)


# --- the command ---


def coverage(capsys, *names):
    from tinyattn.app import cli

    code = cli.main(["coverage", *names])
    return code, capsys.readouterr().out.splitlines()


def test_coverage_command_says_what_tinyattn_has(capsys):
    code, lines = coverage(capsys, "torch.nn.Linear", "nn.LayerNorm", "F.softmax", "Tensor.view", "Module.apply",
                           "tinyattn.optim.LBFGS")
    assert code == 0
    assert lines == ["torch.nn.Linear: tinyattn has it, as tinyattn.nn.Linear",
                     "torch.nn.LayerNorm: tinyattn has it, as tinyattn.nn.LayerNorm",
                     "torch.nn.functional.softmax: tinyattn has it, as tinyattn.nn.functional.softmax",
                     "torch.Tensor.view: tinyattn has it, as tinyattn.Tensor.view",
                     "torch.nn.Module.apply: tinyattn has it, as tinyattn.nn.Module.apply",
                     "torch.optim.LBFGS: tinyattn has it, as tinyattn.optim.LBFGS"]


def test_coverage_command_says_what_is_left_out_and_why_and_what_is_missing(capsys):
    lacking = names_tinyattn_lacks(nn, "torch.nn")
    name = next(n for n in lacking if not missing.left_out_reason(f"torch.nn.{n}"))
    code, lines = coverage(capsys, "torch.jit.script", "torch.nn.modules.linear.Linear", f"torch.nn.{name}",
                           "torch.no_such_thing")
    assert code == 1
    assert lines[0] == "torch.jit.script: left out of tinyattn on purpose: TorchScript compiler"
    assert lines[1].startswith("torch.nn.modules.linear.Linear: left out of tinyattn on purpose: PyTorch's internal")
    assert lines[2] == f"torch.nn.{name}: a PyTorch name that tinyattn does not implement (yet)"
    assert lines[3].startswith("torch.no_such_thing: not one of PyTorch's public names") and "spelling" in lines[3]


def test_coverage_command_finds_a_bare_name_in_every_namespace(capsys):
    code, lines = coverage(capsys, "softmax")
    assert code == 0
    assert lines[0].startswith("torch.softmax: tinyattn has it")
    assert "torch.nn.functional.softmax: tinyattn has it, as tinyattn.nn.functional.softmax" in lines
    assert "torch.Tensor.softmax: tinyattn has it, as tinyattn.Tensor.softmax" in lines


def test_coverage_command_needs_a_name(capsys):
    from tinyattn.app import cli

    with pytest.raises(SystemExit) as exit_status:
        cli.main(["coverage"])
    assert exit_status.value.code == 2


def test_the_coverage_report_uses_the_librarys_list_of_names_left_out():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "tools" / "coverage_report.py"
    spec = importlib.util.spec_from_file_location("coverage_report", path)
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    assert report.LEFT_OUT is missing.LEFT_OUT and report.tinyattn_object is coverage_command.tinyattn_object

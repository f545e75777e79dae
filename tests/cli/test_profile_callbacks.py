"""The PyTorch Lightning and Hugging Face Trainer callbacks around real trainers, on a CPU.

Both packages are optional (tcreport depends on neither): each test skips without its package.
``.ci/run`` installs them (``lightning``, ``transformers`` with ``accelerate``, pinned; about 45 s
together on the CI machine), so there they run. Their own deprecation warnings are theirs, not
tcreport's, and are ignored here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

try:
    import torch
    from torch import nn
except ImportError:
    pytest.skip("needs PyTorch (pip install torch==2.13.0)", allow_module_level=True)

import tcreport  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]


def test_lightning_callback(tmp_path: Path) -> None:
    pl = pytest.importorskip("lightning.pytorch")
    base: Any = pl.LightningModule

    class Model(base):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(24, 40), nn.ReLU(), nn.Linear(40, 8))

        def training_step(self, batch: list[torch.Tensor], index: int) -> Any:
            return self.net(batch[0]).pow(2).mean()

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.randn(64, 24)), batch_size=8
    )
    callback = tcreport.lightning_callback(steps=range(1, 3), output_dir=tmp_path / "pl")
    trainer = pl.Trainer(
        max_steps=6, callbacks=[callback], logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, accelerator="cpu",
        default_root_dir=tmp_path,
    )  # fmt: skip
    trainer.fit(Model(), data)
    run = callback.run
    assert run.report == tmp_path / "pl" / "report.html" and run.report.is_file()
    assert run.analysed.summary()["iterations"]["aggregated"] == 2
    assert "AU006" in set(run.analysed.findings["id"])  # a float32 model on a CPU


def test_hugging_face_trainer_callback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing here needs the hub; never ask it
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")

    # ignore[misc]: torch is Any to mypy where it is not installed (CI's static checks)
    class Model(nn.Module):  # type: ignore[misc, unused-ignore]
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Linear(24, 8)

        def forward(self, x: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
            out = self.net(x)
            return {"loss": (out - labels).pow(2).mean(), "logits": out}

    class Data(torch.utils.data.Dataset[dict[str, torch.Tensor]]):  # type: ignore[misc, unused-ignore]
        def __len__(self) -> int:
            return 64

        def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
            return {"x": torch.randn(24), "labels": torch.randn(8)}

    callback = tcreport.trainer_callback(steps=range(1, 3), output_dir=tmp_path / "hf")
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "trainer"), max_steps=6, per_device_train_batch_size=8,
        report_to=[], use_cpu=True, save_strategy="no", logging_strategy="no", disable_tqdm=True,
    )  # fmt: skip
    transformers.Trainer(
        model=Model(), args=args, train_dataset=Data(), callbacks=[callback]
    ).train()
    run = callback.run
    assert run.report is not None and run.report.is_file()
    assert run.analysed.summary()["iterations"]["aggregated"] == 2

"""Drivers for public programs that are libraries (model classes, no script to run).

A driver is a short script, written here in torch's API, that imports the public
module from the program's fresh copy, builds its model with tiny settings and calls
it the way the library's README shows. ``tools/run_public_programs.py`` writes it
next to the copy and rewrites its torch imports exactly as it rewrites the program's,
so under tinyattn the driver is the same text with ``import tinyattn as torch``.

The torch run saves its freshly initialised ``state_dict`` (``share``); the tinyattn
run loads it, so both compute from the same weights on the same NumPy inputs. Each
run saves what it observed (outputs, losses, gradients of every parameter) and the
runner compares them. Observations named ``loose.*`` are compared by shape only
(for example a path that samples with the library's own random generator).
"""

from __future__ import annotations

PRELUDE = '''
import os
import numpy as np
import torch

SHARED = os.environ["PUBLIC_SHARED"]
IS_TORCH = torch.__name__ == "torch"
RNG = np.random.default_rng(0)
OBS = {}


def share(model, name="model"):
    """torch's initial weights, loaded by the tinyattn run."""
    path = os.path.join(SHARED, name + ".npz")
    if IS_TORCH:
        np.savez(path, **{k: v.detach().numpy() for k, v in model.state_dict().items()})
    elif os.path.exists(path):
        with np.load(path) as f:
            model.load_state_dict({k: torch.tensor(f[k]) for k in f.files})
    return model


def randn(*shape):
    return torch.tensor(RNG.standard_normal(shape).astype(np.float32))


def randint(high, *shape):
    return torch.tensor(RNG.integers(0, high, size=shape).astype(np.int64))


def observe(name, value):
    OBS[name] = value.detach().numpy() if hasattr(value, "detach") else np.asarray(value)


def observe_grads(model, prefix="grad."):
    for n, p in model.named_parameters():
        if p.grad is not None:
            observe(prefix + n, p.grad)


def finish():
    np.savez(os.path.join(SHARED, ("torch" if IS_TORCH else "tinyattn") + ".npz"), **OBS)
    print(f"observations: {len(OBS)}")

'''

MAMBA = """
from model import Mamba, ModelArgs

model = share(Mamba(ModelArgs(d_model=16, n_layer=2, vocab_size=50, d_state=4)))
ids = randint(50, 2, 12)
logits = model(ids)
loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                         ids[:, 1:].reshape(-1))
loss.backward()
observe("logits", logits)
observe("loss", loss)
observe_grads(model)
print(f"loss {loss.item():.4f}")
finish()
"""

PERCEIVER = """
from perceiver_pytorch import Perceiver, PerceiverIO

model = share(Perceiver(input_channels=3, input_axis=2, num_freq_bands=4, max_freq=10.0,
                        depth=2, num_latents=8, latent_dim=16, cross_heads=1, latent_heads=2,
                        cross_dim_head=8, latent_dim_head=8, num_classes=5), "perceiver")
img = randn(2, 6, 6, 3)
mask = None
logits = model(img)
loss = torch.nn.functional.cross_entropy(logits, randint(5, 2))
loss.backward()
observe("perceiver.logits", logits)
observe_grads(model, "perceiver.grad.")

io = share(PerceiverIO(dim=12, queries_dim=10, logits_dim=7, depth=2, num_latents=6,
                       latent_dim=16, cross_heads=1, latent_heads=2, cross_dim_head=8,
                       latent_dim_head=8, decoder_ff=True), "perceiver_io")
seq, queries = randn(2, 9, 12), randn(2, 4, 10)
mask = torch.tensor(np.array([[True] * 9, [True] * 6 + [False] * 3]))
out = io(seq, mask=mask, queries=queries)
out.pow(2).mean().backward()
observe("io.out", out)
observe_grads(io, "io.grad.")
print(f"loss {loss.item():.4f}")
finish()
"""

LINFORMER = """
from linformer import LinformerLM

model = share(LinformerLM(num_tokens=40, dim=16, seq_len=12, depth=2, k=4, heads=2,
                          one_kv_head=False, share_kv=False))
ids = randint(40, 2, 12)
logits = model(ids)
loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 40), ids.reshape(-1))
loss.backward()
observe("logits", logits)
observe_grads(model)
print(f"loss {loss.item():.4f}")
finish()
"""

CONFORMER = """
import torch.nn as nn
from conformer import Conformer

model = share(Conformer(num_classes=10, input_dim=8, encoder_dim=16, num_encoder_layers=2,
                        num_attention_heads=2, conv_kernel_size=3, input_dropout_p=0.0,
                        feed_forward_dropout_p=0.0, attention_dropout_p=0.0,
                        conv_dropout_p=0.0))
model.eval()  # BatchNorm1d in the convolution module: running statistics, same in both
inputs = randn(3, 29, 8)
input_lengths = torch.LongTensor([29, 27, 25])
targets = torch.LongTensor([[1, 3, 3, 4, 2], [1, 3, 4, 2, 0], [1, 3, 2, 0, 0]])
target_lengths = torch.LongTensor([5, 4, 3])
outputs, output_lengths = model(inputs, input_lengths)
loss = nn.CTCLoss()(outputs.transpose(0, 1), targets, output_lengths, target_lengths)
loss.backward()
observe("outputs", outputs)
observe("output_lengths", output_lengths)
observe("ctc_loss", loss)
observe_grads(model)
print(f"ctc loss {loss.item():.4f}")
finish()
"""

INFORMER = """
from models.model import Informer

def inputs():
    x_enc, x_dec = randn(2, 16, 3), randn(2, 12, 3)
    mark_enc, mark_dec = randint(4, 2, 16, 4), randint(4, 2, 12, 4)
    return x_enc, mark_enc, x_dec, mark_dec

for attn in ("full", "prob"):
    model = share(Informer(enc_in=3, dec_in=3, c_out=3, seq_len=16, label_len=8, out_len=4,
                           factor=3, d_model=16, n_heads=2, e_layers=2, d_layers=1, d_ff=16,
                           dropout=0.0, attn=attn, embed="fixed", freq="h",
                           device=torch.device("cpu")), attn)
    out = model(*inputs())
    loss = out.pow(2).mean()
    loss.backward()
    # ProbSparse attention samples keys with the library's own generator
    key = attn if attn == "full" else "loose." + attn
    observe(key + ".out", out)
    if attn == "full":
        observe_grads(model, "full.grad.")
    print(f"{attn} attention: out {tuple(out.shape)} loss {loss.item():.4f}")
finish()
"""

DIFFUSION_UNET = """
from modules import UNet

model = share(UNet(c_in=3, c_out=3, time_dim=256, device="cpu"))
x = randn(1, 3, 64, 64)
t = torch.tensor(np.array([7]))
noise = randn(1, 3, 64, 64)
pred = model(x, t)
loss = torch.nn.functional.mse_loss(pred, noise)
loss.backward()
observe("pred", pred)
observe("loss", loss)
observe_grads(model)
print(f"mse {loss.item():.4f}")
finish()
"""

SWIN = """
from swin_transformer_pytorch import SwinTransformer

model = share(SwinTransformer(hidden_dim=8, layers=(2, 2, 2, 2), heads=(1, 2, 2, 2),
                              channels=3, num_classes=4, head_dim=4, window_size=2,
                              downscaling_factors=(2, 2, 2, 2), relative_pos_embedding=True))
x = randn(2, 3, 32, 32)
logits = model(x)
loss = torch.nn.functional.cross_entropy(logits, randint(4, 2))
loss.backward()
observe("logits", logits)
observe_grads(model)
print(f"loss {loss.item():.4f}")
finish()
"""

MOE = """
from moe import MoE

model = MoE(20, 5, num_experts=6, hidden_size=8, k=2, noisy_gating=True)
# The gates start at zero, so every expert ties and top-k's choice among equal values
# decides the routing; torch does not specify that order (tinyattn keeps the first
# indices). Gate weights from NumPy make the routing well defined in both.
with torch.no_grad():
    model.w_gate.copy_(randn(20, 6))
    model.w_noise.copy_(randn(20, 6) * 0.1)
share(model)
model.eval()  # no gating noise: top-k of the clean logits, the same in both
x = randn(7, 20)
y_hat, aux = model(x)
loss = torch.nn.functional.cross_entropy(y_hat, randint(5, 7)) + aux
loss.backward()
observe("y_hat", y_hat)
observe("aux", aux)
observe_grads(model)
model.train()
y_train, aux_train = model(x)  # noisy top-k: the noise comes from the library's generator
observe("loose.y_train", y_train)
print(f"loss {loss.item():.4f}")
finish()
"""

BERT = """
import torch.nn as nn
from bert_pytorch.model import BERT, BERTLM

bert = BERT(30, hidden=16, n_layers=2, attn_heads=2, dropout=0.0)
model = share(BERTLM(bert, 30))
model.eval()  # BERTEmbedding keeps its own dropout of 0.1 whatever BERT's dropout is
tokens = randint(30, 4, 12)
tokens[:, -3:] = 0  # padding
segments = torch.tensor(np.array([[1] * 5 + [2] * 4 + [0] * 3] * 4))
labels = randint(30, 4, 12) * torch.tensor((RNG.random((4, 12)) < 0.3).astype(np.int64))
is_next = torch.tensor(np.array([0, 1, 1, 0]))
criterion = nn.NLLLoss(ignore_index=0)  # as the trainer
next_out, lm_out = model.forward(tokens, segments)
next_loss = criterion(next_out, is_next)
mask_loss = criterion(lm_out.transpose(1, 2), labels)
loss = next_loss + mask_loss
loss.backward()
observe("next_out", next_out)
observe("lm_out", lm_out)
observe("next_loss", next_loss)
observe("mask_loss", mask_loss)
observe_grads(model)
model.train()  # with dropout: the mean loss over draws, compared loosely
with torch.no_grad():
    draws = [criterion(model(tokens, segments)[1].transpose(1, 2), labels).item() for _ in range(30)]
observe("loose.train_mode_losses", np.array(draws))
print(f"loss {loss.item():.4f}; train-mode mask loss mean {np.mean(draws):.4f}")
finish()
"""

DRIVERS = {
    "bert": BERT,
    "mamba": MAMBA,
    "perceiver": PERCEIVER,
    "linformer": LINFORMER,
    "conformer": CONFORMER,
    "informer": INFORMER,
    "diffusion_unet": DIFFUSION_UNET,
    "swin": SWIN,
    "moe": MOE,
}


def driver_source(name: str) -> str:
    """The whole driver script (prelude + body) for ``name``."""
    return PRELUDE + DRIVERS[name]

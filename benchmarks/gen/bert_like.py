"""A BERT-base-size encoder in plain torch (no transformers: the dev machine
has torch 1.13 only), for measuring kiln's cold compile of bert_base where
the GPU machine's HF BertModel cannot be made. Same sizes (vocab 30522,
hidden 768, 12 layers, 12 heads, MLP 3072, seq 128) and op structure as
HF's eager attention without an attention_mask (the additive zero mask,
the token-type buffer expanded to the batch, erf GELU), exported as
cuda_realmodels.py exports: opset 17, static shapes, constant folding.

  /usr/bin/python3 benchmarks/gen/bert_like.py OUT_DIR [BATCH=32]
      # OUT_DIR/model.onnx (435 MB) + OUT_DIR/test_data_set_0/input_0.pb
"""
import math, os, sys
import torch
from torch import nn

V, H, L, NH, I, S, P, T = 30522, 768, 12, 12, 3072, 128, 512, 2
torch.manual_seed(0)


def init(m):
    # HF's _init_weights: normal(0.02) weights, zero biases, LayerNorm ones/zeros.
    for mod in m.modules():
        if isinstance(mod, (nn.Linear, nn.Embedding)):
            mod.weight.data.normal_(0.0, 0.02)
        if isinstance(mod, nn.Linear):
            mod.bias.data.zero_()
        if isinstance(mod, nn.LayerNorm):
            mod.weight.data.fill_(1.0); mod.bias.data.zero_()


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.query, self.key, self.value = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, H)
        self.attn_out, self.ln1 = nn.Linear(H, H), nn.LayerNorm(H, eps=1e-12)
        self.inter, self.out, self.ln2 = nn.Linear(H, I), nn.Linear(I, H), nn.LayerNorm(H, eps=1e-12)

    def heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, NH, H // NH).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(H // NH) + mask
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(x.shape[0], x.shape[1], H)
        x = self.ln1(self.attn_out(ctx) + x)
        h = self.inter(x)
        h = h * 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0)))
        return self.ln2(self.out(h) + x)


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.word, self.pos, self.tok = nn.Embedding(V, H), nn.Embedding(P, H), nn.Embedding(T, H)
        self.ln = nn.LayerNorm(H, eps=1e-12)
        self.layers = nn.ModuleList([Layer() for _ in range(L)])
        self.register_buffer("position_ids", torch.arange(P).unsqueeze(0))
        self.register_buffer("token_type_ids", torch.zeros(1, P, dtype=torch.long))

    def forward(self, ids):
        b, s = ids.shape
        pos = self.position_ids[:, :s]
        tok = self.token_type_ids[:, :s].expand(b, s)
        x = self.ln(self.word(ids) + self.tok(tok) + self.pos(pos))
        mask = torch.ones(b, s)[:, None, None, :]
        mask = (1.0 - mask) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, mask)
        return x


def main(out, batch):
    from onnx import numpy_helper
    m = Bert().eval(); init(m)
    ids = torch.randint(0, 1000, (batch, S), dtype=torch.int64)
    os.makedirs(f"{out}/test_data_set_0", exist_ok=True)
    torch.onnx.export(m, (ids,), f"{out}/model.onnx", opset_version=17, input_names=["input_0"],
                      output_names=["output_0"], do_constant_folding=True)
    with open(f"{out}/test_data_set_0/input_0.pb", "wb") as f:
        f.write(numpy_helper.from_array(ids.numpy(), "input_0").SerializeToString())


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 32)

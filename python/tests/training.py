"""The training loop both training checks run (kiln_test.py with torch 1.13,
torch_compile_check.py on torch 2.x): SGD steps of a compiled copy and an
eager copy of one model on the same batch."""
import torch


def sgd_losses(compiled, model, reference, x, target, steps=20, lr=0.05):
    """[(loss, reference loss)] per step; `compiled` runs `model`'s
    parameters, `reference` is an eager copy."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(compiled(x), target)
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss = torch.nn.functional.mse_loss(reference(x), target)
        ref_loss.backward()
        ref_opt.step()
        losses.append((loss.item(), ref_loss.item()))
    return losses

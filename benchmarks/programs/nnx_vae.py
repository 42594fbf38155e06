"""Flax NNX: a variational autoencoder trained with ``nnx.Optimizer`` in an ``nnx.jit``
step, in the style of Flax's NNX VAE example,
https://github.com/google/flax/tree/main/examples/nnx_toy_examples (``Encoder`` returning
mean and log-variance, the reparameterisation with ``rngs.noise()``, ``nnx.value_and_grad``
of a loss of reconstruction plus KL).
"""
import jax
import jax.numpy as jnp
import optax
from flax import nnx

from . import Case


class Encoder(nnx.Module):
    def __init__(self, din, dmid, dlatent, *, rngs):
        self.linear1 = nnx.Linear(din, dmid, rngs=rngs)
        self.linear_mean = nnx.Linear(dmid, dlatent, rngs=rngs)
        self.linear_std = nnx.Linear(dmid, dlatent, rngs=rngs)

    def __call__(self, x):
        x = jax.nn.relu(self.linear1(x))
        return self.linear_mean(x), self.linear_std(x)


class Decoder(nnx.Module):
    def __init__(self, dlatent, dmid, dout, *, rngs):
        self.linear1 = nnx.Linear(dlatent, dmid, rngs=rngs)
        self.linear2 = nnx.Linear(dmid, dout, rngs=rngs)

    def __call__(self, z):
        return self.linear2(jax.nn.relu(self.linear1(z)))


class VAE(nnx.Module):
    def __init__(self, din, dmid, dlatent, *, rngs):
        self.encoder = Encoder(din, dmid, dlatent, rngs=rngs)
        self.decoder = Decoder(dlatent, dmid, din, rngs=rngs)
        self.rngs = rngs

    def __call__(self, x):
        mean, logvar = self.encoder(x)
        z = mean + jnp.exp(0.5 * logvar) * jax.random.normal(self.rngs.noise(), mean.shape)
        return self.decoder(z), mean, logvar


def vae_loss(model, x):
    logits, mean, logvar = model(x)
    reconstruction = optax.sigmoid_binary_cross_entropy(logits, x).mean()
    kl = -0.5 * jnp.mean(1 + logvar - mean ** 2 - jnp.exp(logvar))
    return reconstruction + 0.1 * kl


@nnx.jit
def train_step(model, optimizer, x):
    loss, grads = nnx.value_and_grad(vae_loss)(model, x)
    optimizer.update(model, grads)
    return loss


def program() -> Case:
    model = VAE(16, 32, 4, rngs=nnx.Rngs(0, noise=1))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    n = 1 + len(jax.tree_util.tree_leaves(nnx.state((model, optimizer))))
    return Case(train_step, (model, optimizer, jnp.ones((8, 16)) * 0.5), outputs=n, written_back=(model, optimizer))

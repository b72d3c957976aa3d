"""The JAX twins of the scripted programs in test_grad_jax.py, line for line, imported only by the JAX
reference process (``jax_reference.py``)."""

import jax  # noqa: F401  (the reference process evaluates jax.grad(...) expressions in this module)
import jax.numpy as jnp


def nth(grad, f, order):
    for _ in range(order):
        f = grad(f)
    return f


def power_by_loop_jax(x):
    y = 1.0
    for _ in range(4):
        y = y * x
    return y


def sine_twice_jax(x):
    y = x
    for _ in range(2):
        y = jnp.sin(y)
    return y


def fourier_times_x_jax(x):
    s = 0.0
    for k in range(1, 6):
        s = s + jnp.sin(k * x) / k
    return s * x


def array_recurrence_jax(x):
    v = jnp.linspace(0.0, 1.0, 5)
    s = 0.0
    for k in range(3):
        v = jnp.sin(v * x) + x
        s = s + jnp.sum(v * v)
    return s


def branches_in_nested_loops_jax(x):
    y = x
    for i in range(3):
        y = jnp.where(y > 0.5, y * y, jnp.exp(y))
        for j in range(2):
            y = y * 0.5 + jnp.cos(y)
    return y


def in_place_in_a_loop_jax(x):
    v = jnp.linspace(0.0, 1.0, 5)
    s = 0.0
    for k in range(3):
        a = v * x
        a = a + v * x * x
        s = s + jnp.sum(a * a)
    return s


def history_list_jax(x):
    hist = [x]
    for i in range(4):
        hist.append(jnp.sin(hist[-1]) * x)
    s = 0.0
    while len(hist) > 2:
        s = s + hist.pop() * hist[0]
    hist.insert(1, x * x)
    hist[0] = hist[1] * 3.0
    return s + hist[0] + hist[-1]


def list_of_arrays_jax(x):
    arrs = [jnp.linspace(0.0, 1.0, 4) * x]
    for i in range(3):
        arrs.append(jnp.cos(arrs[i]) + x)
    return jnp.sum(arrs[-1] * arrs[1]) + jnp.sum(arrs[0])


def array_ties_jax(a, b):
    return (
        jnp.sum(jnp.maximum(a, b))
        + jnp.sum(jnp.minimum(a, b) * 3.0)
        + jnp.sum(jnp.clip(a, b, 1.0))
        + jnp.sum(jnp.abs(a))
    )


def fourth_jax(x):
    y = x
    for i in range(3):
        y = jnp.sin(y) * x
    return y


TIES = {
    "np_maximum": jnp.maximum,
    "np_minimum": jnp.minimum,
    "builtin_max": jnp.maximum,
    "builtin_min": jnp.minimum,
    "relu": lambda a, b: jnp.maximum(a, 0.0) + b,
    "clipped": lambda a, b: jnp.clip(a, b, 2.0),
    "absolutes": lambda a, b: jnp.abs(a) + jnp.abs(b),
}

"""Source text of the recurrence ops (torch-free, so the analyzer can inline it without importing torch)."""

SOURCES = {
    "lstm_recurrence": '''
def lstm_recurrence(gates_x, w_hh, b_hh, h0, c0, batch_first, reverse):
    """One LSTM layer direction over all steps; gates_x = x @ w_ih.T + b_ih for every step (i, f, g, o)."""
    steps = gates_x.shape[1] if batch_first else gates_x.shape[0]
    h, c = h0, c0
    ys = [None] * steps
    for i in range(steps):
        t = steps - 1 - i if reverse else i
        g = (gates_x[:, t] if batch_first else gates_x[t]) + torch.ops.aten.linear.default(h, w_hh, b_hh)
        i_g, f_g, g_g, o_g = g.chunk(4, dim=-1)
        c = torch.sigmoid(f_g) * c + torch.sigmoid(i_g) * torch.tanh(g_g)
        h = torch.sigmoid(o_g) * torch.tanh(c)
        ys[t] = h
    return torch.stack(ys, dim=1 if batch_first else 0), h, c
''',
    "gru_recurrence": '''
def gru_recurrence(gates_x, w_hh, b_hh, h0, batch_first, reverse):
    """One GRU layer direction over all steps; gates_x = x @ w_ih.T + b_ih for every step (r, z, n)."""
    steps = gates_x.shape[1] if batch_first else gates_x.shape[0]
    h = h0
    ys = [None] * steps
    for i in range(steps):
        t = steps - 1 - i if reverse else i
        gx = gates_x[:, t] if batch_first else gates_x[t]
        gh = torch.ops.aten.linear.default(h, w_hh, b_hh)
        x_r, x_z, x_n = gx.chunk(3, dim=-1)
        h_r, h_z, h_n = gh.chunk(3, dim=-1)
        r = torch.sigmoid(x_r + h_r)
        z = torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + r * h_n)
        h = (1 - z) * n + z * h
        ys[t] = h
    return torch.stack(ys, dim=1 if batch_first else 0), h
''',
    "rnn_recurrence": '''
def rnn_recurrence(gates_x, w_hh, b_hh, h0, batch_first, reverse, relu):
    """One Elman RNN layer direction over all steps; gates_x = x @ w_ih.T + b_ih for every step."""
    steps = gates_x.shape[1] if batch_first else gates_x.shape[0]
    h = h0
    ys = [None] * steps
    for i in range(steps):
        t = steps - 1 - i if reverse else i
        pre = (gates_x[:, t] if batch_first else gates_x[t]) + torch.ops.aten.linear.default(h, w_hh, b_hh)
        h = torch.relu(pre) if relu else torch.tanh(pre)
        ys[t] = h
    return torch.stack(ys, dim=1 if batch_first else 0), h
''',
}

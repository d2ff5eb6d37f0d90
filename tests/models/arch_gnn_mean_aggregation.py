import torch
import torch.nn as nn


class Model(nn.Module):
    """One GraphSAGE-style layer with mean aggregation: messages from each edge's source node, summed into the
    destination node with index_add, divided by the in-degree (a scatter_add of ones), added to the node's own
    projection."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.msg = nn.Linear(in_dim, out_dim)
        self.own = nn.Linear(in_dim, out_dim)

    def forward(self, x, edge_src, edge_dst):
        m = self.msg(x)[edge_src]
        agg = torch.zeros(x.shape[0], m.shape[1], device=x.device).index_add_(0, edge_dst, m)
        ones = torch.ones(edge_dst.shape[0], device=x.device)
        deg = torch.zeros(x.shape[0], device=x.device).scatter_add_(0, edge_dst, ones)
        return torch.relu(agg / deg.clamp(min=1).unsqueeze(1) + self.own(x))


num_nodes = 300
num_edges = 1200
in_dim = 48
out_dim = 64


def get_inputs():
    return [torch.randn(num_nodes, in_dim), torch.randint(0, num_nodes, (num_edges,)),
            torch.randint(0, num_nodes, (num_edges,))]


def get_init_inputs():
    return [in_dim, out_dim]
